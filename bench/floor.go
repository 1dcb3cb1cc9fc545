package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The floor server (-floor) is the least an MCP filesystem server can do
// over stdio: a hand-written JSON-RPC loop with encoding/json and no SDK,
// serving the reference server's read_text_file, write_file and edit_file
// with one os call each (os.ReadFile, os.WriteFile; no fsync, no temp file,
// no checks), calls handled one at a time. Driven by the same client, it
// shows how fast the client and the pipes let any server go on this
// machine: a ceiling for every contender, not a contender.

// floorSpec is the floor server: this program re-executed with -serve-floor.
func floorSpec() (serverSpec, error) {
	self, err := os.Executable()
	if err != nil {
		return serverSpec{}, err
	}
	ref := referenceSpec("", nil)
	return serverSpec{
		key:     "floor",
		label:   "floor (no SDK, no fsync)",
		command: func(string) *exec.Cmd { return exec.Command(self, "-serve-floor") },
		read:    ref.read,
		write:   ref.write,
		edit:    ref.edit,
		tools:   ref.tools,
	}, nil
}

type floorRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string `json:"name"`
		Arguments struct {
			Path    string `json:"path"`
			Content string `json:"content"`
			Edits   []struct {
				OldText string `json:"oldText"`
				NewText string `json:"newText"`
			} `json:"edits"`
		} `json:"arguments"`
	} `json:"params"`
}

// serveFloor runs the floor server on stdin and stdout until stdin ends.
func serveFloor(in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriter(out)
	var mu sync.Mutex
	reply := func(id json.RawMessage, result any, rpcErr *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	},
	) error {
		msg := map[string]any{"jsonrpc": "2.0", "id": id}
		if rpcErr != nil {
			msg["error"] = rpcErr
		} else {
			msg["result"] = result
		}
		b, err := json.Marshal(msg)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
		return w.Flush()
	}
	tools := []map[string]any{}
	for _, name := range []string{"read_text_file", "write_file", "edit_file"} {
		tools = append(tools, map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}})
	}
	for {
		line, err := r.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		var req floorRequest
		if err := json.Unmarshal(line, &req); err != nil {
			return fmt.Errorf("floor: bad request %q: %w", line, err)
		}
		if len(req.ID) == 0 {
			continue // a notification
		}
		var result any
		switch req.Method {
		case "initialize":
			result = map[string]any{
				"protocolVersion": "2025-11-25",
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "floor", "version": "0"},
			}
		case "tools/list":
			result = map[string]any{"tools": tools}
		case "tools/call":
			result = floorCall(&req)
		default:
			if err := reply(req.ID, nil, &struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}{-32601, "method not found"}); err != nil {
				return err
			}
			continue
		}
		if err := reply(req.ID, result, nil); err != nil {
			return err
		}
	}
}

func floorCall(req *floorRequest) any {
	a := req.Params.Arguments
	text, err := "", error(nil)
	switch req.Params.Name {
	case "read_text_file":
		var b []byte
		if b, err = os.ReadFile(a.Path); err == nil {
			text = string(b)
		}
	case "write_file":
		if err = os.WriteFile(a.Path, []byte(a.Content), 0o644); err == nil {
			text = "Successfully wrote to " + a.Path
		}
	case "edit_file":
		var b []byte
		if b, err = os.ReadFile(a.Path); err == nil {
			s := string(b)
			for _, e := range a.Edits {
				if !strings.Contains(s, e.OldText) {
					err = fmt.Errorf("no match for %q", e.OldText)
					break
				}
				s = strings.Replace(s, e.OldText, e.NewText, 1)
			}
			if err == nil {
				err = os.WriteFile(a.Path, []byte(s), 0o644)
				text = "edited"
			}
		}
	default:
		err = fmt.Errorf("unknown tool %q", req.Params.Name)
	}
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
