// Package execsandbox is the confining command runner. Under read-only and
// workspace-write every command runs in a world built by bubblewrap (the
// default isolation): `/` read-only, the policy's writable roots
// (sandbox.WritableRoots with the policy service's Roots: the set the file
// fence uses) read-write, the protected paths that exist there read-only, a
// missing top-level `.git` of each workspace root reserved, a fresh /dev and
// /proc in its own PID namespace, private IPC and UTS, loopback-only
// networking unless allowed (one network namespace per session, shared by
// its commands: see sessionNets), a new session and no capabilities;
// beneath it
// the inner stage adds Landlock, seccomp and resource limits. Every path
// of the deployment's deny-read set that exists where the command can see
// it is masked on top (see masker). A root server runs commands as the
// workspace owner. Under danger-full-access a command runs in bubblewrap
// with the whole filesystem writable but the masks (see runFullAccess;
// the paths the user approved it once to read unmasked: liftMasks),
// unconfined only when the deployment's deny-read set is empty. Where
// bubblewrap is missing or cannot start, confined commands are refused,
// never run unconfined; IsolationLandlock keeps the older
// Landlock-and-seccomp runner for such hosts, hiding the deny-read paths
// with its Landlock domain and refusing a command where that cannot hold.
// See README.md, and docs/runner.md for the design and the threat model.
package execsandbox
