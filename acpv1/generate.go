package acpv1

//go:generate go run ../internal/acpgen -version 1
