//go:build linux

package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// soakOwnFiles is how many files a session cycles its writes over.
const soakOwnFiles = 4

// soakFixed is the fixture file of each principal's workspace, with content
// naming the principal: reads are not fenced by workspace (only the
// deny-read set hides a file), so the other principal may read it.
const soakFixed = "fixed/readme.txt"

func soakFixedContent(principal string) string {
	return "the fixed file of " + principal + ", readable to the other principal\n"
}

// soakSecret is each principal's secret, a path of the deny-read set
// (.env at any depth): no session, of either principal, reads it.
const soakSecret = ".env"

func soakSecretContent(principal string) string {
	return "TOKEN=the secret of " + principal + "\n"
}

// soakStats counts what the sessions saw.
type soakStats struct {
	calls, protocolErrors, wrong atomic.Int64

	mu    sync.Mutex
	first []string // the first few failures, for the report
}

func (s *soakStats) fail(format string, args ...any) {
	s.wrong.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.first) < 20 {
		s.first = append(s.first, fmt.Sprintf(format, args...))
	}
}

// soakSession is one MCP session's worker: its principal, the other
// principal (whose workspace it must not reach), and what it wrote.
type soakSession struct {
	id        int
	me, other httpPrincipal
	cs        *mcp.ClientSession
	stats     *soakStats
	// content is what the session last wrote to each own file ("" before
	// the first write), execContent what its commands last wrote to its
	// command file.
	content     [soakOwnFiles]string
	execContent string
}

func (s *soakSession) own(j int) string {
	return "s" + strconv.Itoa(s.id) + "-" + strconv.Itoa(j) + ".txt"
}

func (s *soakSession) execFile() string { return "s" + strconv.Itoa(s.id) + "-exec.txt" }

// wrote records every file the session wrote, by path relative to its
// workspace, with its last content.
func (s *soakSession) wrote(into map[string]string) {
	for j, c := range s.content {
		if c != "" {
			into[s.own(j)] = c
		}
	}
	if s.execContent != "" {
		into[s.execFile()] = s.execContent
	}
}

func (s *soakSession) call(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, bool) {
	s.stats.calls.Add(1)
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		s.stats.protocolErrors.Add(1)
		s.stats.fail("session %d (%s): %s %v: protocol error: %v", s.id, s.me.name, name, args, err)
		return nil, false
	}
	return res, true
}

// expectText checks a success whose text is want.
func (s *soakSession) expectText(res *mcp.CallToolResult, what, want string) bool {
	switch {
	case res.IsError:
		s.stats.fail("session %d (%s): %s: unexpected error %v: %s", s.id, s.me.name, what, code(res), text(res))
		return false
	case text(res) != want:
		s.stats.fail("session %d (%s): %s: text %q, want %q", s.id, s.me.name, what, text(res), want)
		return false
	}
	return true
}

// expectStdout checks an exec result: exit code 0 and stdout want.
func (s *soakSession) expectStdout(res *mcp.CallToolResult, what, want string) bool {
	sc, _ := res.StructuredContent.(map[string]any)
	if res.IsError || sc == nil || sc["exit_code"] != float64(0) || sc["stdout"] != want {
		s.stats.fail("session %d (%s): %s: isError=%v %s, want exit code 0 and stdout %q", s.id, s.me.name, what, res.IsError, text(res), want)
		return false
	}
	return true
}

// expectRefused checks a refusal: an error result that does not carry the
// other principal's secret.
func (s *soakSession) expectRefused(res *mcp.CallToolResult, what string) {
	if !res.IsError || strings.Contains(text(res), soakSecretContent(s.other.name)) {
		s.stats.fail("session %d (%s): %s: isError=%v code=%v %q, want a refusal", s.id, s.me.name, what, res.IsError, code(res), text(res))
	}
}

// expectDisk checks the bytes of a file of the session's workspace.
func (s *soakSession) expectDisk(what, rel, want string) {
	got, err := os.ReadFile(filepath.Join(s.me.ws, rel))
	if err != nil || string(got) != want {
		s.stats.fail("session %d (%s): %s: disk holds %q (%v), want %q", s.id, s.me.name, what, got, err, want)
	}
}

// expectAbsent checks that nothing exists at p.
func (s *soakSession) expectAbsent(what, p string) {
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		s.stats.fail("session %d (%s): %s: %s exists (%v)", s.id, s.me.name, what, p, err)
	}
}

// step makes call number k of the session's mix, ten kinds in turn: write
// of an own file (create, then update), read of it, edit of it, grep of it
// or list of the fixed directory, a command reading it or writing the
// command file, then into the other principal's workspace a write, a read
// and a command reading and writing (each refused, nothing landing and
// nothing of the other's coming back), a read of the own fixed file, and a
// read of an absent file.
func (s *soakSession) step(ctx context.Context, k int) {
	j := (k / 10) % soakOwnFiles
	own := s.own(j)
	ownPath := filepath.Join(s.me.ws, own)
	intruder := filepath.Join(s.other.ws, "intruder-"+strconv.Itoa(s.id)+"-"+strconv.Itoa(k)+".txt")
	switch k % 10 {
	case 0:
		content := fmt.Sprintf("session %d iteration %d\nsecond line\n", s.id, k)
		verb := "Updated file"
		if s.content[j] == "" {
			verb = "Created file"
		}
		want := "<path>" + ownPath + "</path>\n<type>file</type>\n<content>\n" + verb + "\n</content>"
		if res, ok := s.call(ctx, "write", map[string]any{"file_path": own, "content": content}); ok && s.expectText(res, "write "+own, want) {
			s.content[j] = content
		}
		s.expectDisk("write "+own, own, s.content[j])
	case 1:
		want := "<path>" + ownPath + "</path>\n<type>file</type>\n<content>\n1: " +
			strings.ReplaceAll(strings.TrimSuffix(s.content[j], "\n"), "\n", "\n2: ") + "\n\n(End of file - total 2 lines)\n</content>"
		if res, ok := s.call(ctx, "read", map[string]any{"file_path": own}); ok {
			s.expectText(res, "read "+own, want)
		}
	case 2:
		edited := strings.Replace(s.content[j], "iteration", "edited", 1)
		res, ok := s.call(ctx, "edit", map[string]any{"file_path": own, "old_string": "iteration", "new_string": "edited"})
		if ok && s.expectText(res, "edit "+own, "The file "+ownPath+" has been updated successfully.") {
			s.content[j] = edited
		}
		s.expectDisk("edit "+own, own, s.content[j])
	case 3:
		if (k/10)%2 == 0 {
			want := "<path>" + ownPath + "</path>\n<matches>\n" + own + "\n\n(1 file with matches (1 searched).)\n</matches>"
			if res, ok := s.call(ctx, "grep", map[string]any{"pattern": fmt.Sprintf("session %d edited", s.id), "path": own}); ok {
				s.expectText(res, "grep "+own, want)
			}
			return
		}
		want := "<path>" + filepath.Join(s.me.ws, "fixed") + "</path>\n<type>directory</type>\n<entries>\n" +
			fmt.Sprintf("readme.txt (%d bytes, modified 2001-02-03T04:05:06Z)\n", len(soakFixedContent(s.me.name))) +
			"\n(End of directory - total 1 entries)\n</entries>"
		if res, ok := s.call(ctx, "list", map[string]any{"path": "fixed"}); ok {
			s.expectText(res, "list fixed", want)
		}
	case 4:
		if (k/10)%2 == 0 {
			if res, ok := s.call(ctx, "exec", map[string]any{"command": "cat " + own}); ok {
				s.expectStdout(res, "exec cat "+own, s.content[j])
			}
			return
		}
		line := fmt.Sprintf("session %d exec %d\n", s.id, k)
		command := fmt.Sprintf("printf '%%s\\n' 'session %d exec %d' > %s && cat %s", s.id, k, s.execFile(), s.execFile())
		if res, ok := s.call(ctx, "exec", map[string]any{"command": command}); ok && s.expectStdout(res, "exec "+command, line) {
			s.execContent = line
		}
		s.expectDisk("exec "+command, s.execFile(), s.execContent)
	case 5:
		if res, ok := s.call(ctx, "write", map[string]any{"file_path": intruder, "content": "intruder\n"}); ok {
			s.expectRefused(res, "write into the other's workspace")
		}
		s.expectAbsent("write into the other's workspace", intruder)
	case 6:
		if res, ok := s.call(ctx, "read", map[string]any{"file_path": filepath.Join(s.other.ws, soakSecret)}); ok {
			s.expectRefused(res, "read of the other's secret")
		}
	case 7:
		command := "cat " + filepath.Join(s.other.ws, soakSecret) + "; echo intruder > " + intruder
		if res, ok := s.call(ctx, "exec", map[string]any{"command": command}); ok {
			sc, _ := res.StructuredContent.(map[string]any)
			if strings.Contains(text(res), soakSecretContent(s.other.name)) || (!res.IsError && sc["exit_code"] == float64(0)) {
				s.stats.fail("session %d (%s): exec %q: isError=%v %q, want a failed command that shows nothing of the other's", s.id, s.me.name, command, res.IsError, text(res))
			}
		}
		s.expectAbsent("exec into the other's workspace", intruder)
	case 8:
		want := "<path>" + filepath.Join(s.me.ws, soakFixed) + "</path>\n<type>file</type>\n<content>\n1: " +
			strings.TrimSuffix(soakFixedContent(s.me.name), "\n") + "\n\n(End of file - total 1 lines)\n</content>"
		if res, ok := s.call(ctx, "read", map[string]any{"file_path": soakFixed}); ok {
			s.expectText(res, "read "+soakFixed, want)
		}
	case 9:
		missing := "missing-" + strconv.Itoa(k%7) + ".txt"
		if res, ok := s.call(ctx, "read", map[string]any{"file_path": missing}); ok && (!res.IsError || code(res) != "FS_NOT_FOUND") {
			s.stats.fail("session %d (%s): read %s: isError=%v code=%v, want FS_NOT_FOUND", s.id, s.me.name, missing, res.IsError, code(res))
		}
	}
}
