package api

//go:generate go tool controller-gen object paths=.
