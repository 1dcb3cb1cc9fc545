// Package gpgagent finds the user's gpg-agent for signing inside the
// sandbox (--gpg-agent, issue 36): its home directory, its usual socket and
// its restricted ("extra") socket, as GnuPG's own gpgconf reports them.
//
// The restricted socket is the one GnuPG made for forwarding the agent to
// a host that is not trusted: it signs and decrypts with the keys the agent
// holds, but refuses to export a secret key or to change the agent's
// keys and passphrases (gpg-agent(1), --extra-socket).
package gpgagent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Agent is one user's gpg-agent.
type Agent struct {
	// Home is GnuPG's home directory (canonical): the keyrings and the
	// private keys.
	Home string
	// Socket is the path gpg connects to (agent-socket).
	Socket string
	// ExtraSocket is the agent's restricted socket (agent-extra-socket).
	ExtraSocket string
}

// PublicFiles are the names of the files in Home that signing reads and
// that hold no secret: the public keyrings, the trust database and the
// options. The private keys (private-keys-v1.d), the revocation
// certificates (openpgp-revocs.d) and everything else are not among them.
var PublicFiles = []string{"pubring.kbx", "pubring.gpg", "trustdb.gpg", "tofu.db", "gpg.conf", "common.conf"}

// launchTimeout bounds each gpgconf run.
const launchTimeout = 10 * time.Second

// Find starts the agent of the calling process's user when it is not
// running (gpgconf --launch gpg-agent, as gpg itself would) and returns
// where it is (gpgconf --list-dirs), for the environment the process has
// (HOME, GNUPGHOME). Errors: gpgconf is not installed or fails (its
// message), or lists no home or socket.
func Find(ctx context.Context) (Agent, error) {
	ctx, cancel := context.WithTimeout(ctx, launchTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "gpgconf", "--launch", "gpg-agent").CombinedOutput(); err != nil {
		return Agent{}, gpgconfError("--launch gpg-agent", out, err)
	}
	out, err := exec.CommandContext(ctx, "gpgconf", "--list-dirs").Output()
	if err != nil {
		return Agent{}, gpgconfError("--list-dirs", out, err)
	}
	dirs := parseDirs(out)
	a := Agent{Home: dirs["homedir"], Socket: dirs["agent-socket"], ExtraSocket: dirs["agent-extra-socket"]}
	if a.Home == "" || a.Socket == "" || a.ExtraSocket == "" {
		return Agent{}, fmt.Errorf("gpgconf --list-dirs names no homedir, agent-socket or agent-extra-socket")
	}
	if c, err := filepath.EvalSymlinks(a.Home); err == nil {
		a.Home = c
	}
	return a, nil
}

// gpgconfError is a failed gpgconf run's error, with its message.
func gpgconfError(args string, out []byte, err error) error {
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Errorf("gpgconf is not installed (GnuPG's gnupg package has it): %w", err)
	}
	if msg := strings.TrimSpace(string(out)); msg != "" {
		return fmt.Errorf("gpgconf %s: %w: %s", args, err, msg)
	}
	return fmt.Errorf("gpgconf %s: %w", args, err)
}

// parseDirs reads gpgconf --list-dirs output: NAME:VALUE lines, the value
// percent-escaped (":" is %3a).
func parseDirs(out []byte) map[string]string {
	dirs := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if v, err := url.PathUnescape(value); err == nil {
			value = v
		}
		dirs[name] = value
	}
	return dirs
}
