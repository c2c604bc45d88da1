//go:build !unix

package main

func hostileProcess(map[string]bool) {}

func startDaemon() {}
