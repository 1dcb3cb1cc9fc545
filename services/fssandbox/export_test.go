//go:build linux

package fssandbox_test

import (
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/fssandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
)

func fssandboxNew(policy *sandboxpolicy.Service, cwd string) (*fssandbox.FileSystem, error) {
	return fssandbox.New(policy, fslocal.Config{Cwd: cwd}, fssandbox.Config{}, nil)
}
