package execsandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/dsh-go/harness/internal/dirfd"
	"github.com/dsh-go/harness/internal/gpgagent"
	"github.com/dsh-go/harness/internal/subproc"
	"github.com/dsh-go/harness/services/exec"
)

// agentView returns masks with the gpg-agent's directories masked whole
// (--gpg-agent, issue 36): its home and the directory of its socket, each
// an empty read-only tmpfs of mode 0700 unless a directory mask holds it already (the
// masks beneath them dropped: the tmpfs hides them); and the home's public
// files to bind read-only into that mask (subproc.Confinement.Exposed:
// gpgagent.PublicFiles that are regular files with one link now). The
// restricted socket is bound at the agent's socket path by the named
// socket (socketView.sources). A mask, not a mask of each entry: the host's
// agent removes and makes its sockets again at each start, and a mount on
// a path the host removes is gone from the command's view, so entry masks
// would uncover the agent's unrestricted socket to a command running
// across a restart; the tmpfs stays. A nil agent returns masks as they are.
// Errors (*exec.Error, CodeUnavailable): one of the directories is, or
// holds, a writable root of the command.
func agentView(masks []subproc.Masked, agent *gpgagent.Agent, roots []string) ([]subproc.Masked, []string, error) {
	if agent == nil {
		return masks, nil, nil
	}
	for _, d := range agentDirs(agent) {
		for _, r := range roots {
			if dirfd.Beneath(d, r) {
				return nil, nil, &exec.Error{Code: exec.CodeUnavailable, Message: fmt.Sprintf(
					"--gpg-agent masks %s for commands, and it holds the writable root %s; the command was not run. Remedy: a GnuPG home and socket directory apart from the workspace", d, r)}
			}
		}
		masks = slices.Clone(masks)
		if i := slices.IndexFunc(masks, func(m subproc.Masked) bool { return m.Dir && dirfd.Beneath(m.Path, d) }); i >= 0 {
			masks[i].Private = masks[i].Private || masks[i].Path == d
			continue
		}
		masks = slices.DeleteFunc(masks, func(m subproc.Masked) bool { return dirfd.Beneath(d, m.Path) })
		// 0700: GnuPG uses a socket directory only when no one else may
		// search it, and warns of a home others may.
		masks = append(masks, subproc.Masked{Path: d, Dir: true, Private: true})
	}
	var exposed []string
	for _, name := range gpgagent.PublicFiles {
		p := filepath.Join(agent.Home, name)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && links(fi) == 1 {
			exposed = append(exposed, p)
		}
	}
	return masks, exposed, nil
}

// agentDirs are the agent's home and its socket's directory (canonical when
// they resolve), once each.
func agentDirs(agent *gpgagent.Agent) []string {
	var out []string
	for _, d := range []string{agent.Home, filepath.Dir(agent.Socket)} {
		if c, err := filepath.EvalSymlinks(d); err == nil {
			d = c
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// links is fi's hard link count (1 when unknown).
func links(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink) //nolint:unconvert // Nlink is uint32 on some arches
	}
	return 1
}
