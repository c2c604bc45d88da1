package acpv2

//go:generate go run ../internal/acpgen -version 2
