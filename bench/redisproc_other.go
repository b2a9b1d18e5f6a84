//go:build !linux

package main

import "os/exec"

// dieWithParent does nothing here: only Linux kills a child with its
// parent; an interrupted run may leave its redis-server running.
func dieWithParent(*exec.Cmd) {}
