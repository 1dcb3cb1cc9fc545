package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MinMaxLineBytes is the smallest bound on one inbound line: 64 MiB.
const MinMaxLineBytes = 64 << 20

// StdioTransport is newline-delimited JSON-RPC over a reader and a writer
// that survives bad input: a line that is not JSON, not a JSON-RPC message,
// or longer than MaxLineBytes is answered with a JSON-RPC error (parse error
// -32700 or invalid request -32600, with the request's id when it can be
// read, else null) and the connection goes on with the next line. The SDK's
// own stdio transport ends the connection at the first such line.
type StdioTransport struct {
	Reader io.Reader
	Writer io.Writer
	// MaxLineBytes bounds one inbound line; zero or less means
	// MinMaxLineBytes. Size it to the largest request you accept (a write's
	// content, escaped), so that an oversized argument reaches the tool and
	// gets its FS_TOO_LARGE result.
	MaxLineBytes int
}

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	limit := max(t.MaxLineBytes, MinMaxLineBytes)
	c := &stdioConn{w: t.Writer, lines: make(chan lineOrErr), closed: make(chan struct{})}
	go c.readLines(bufio.NewReaderSize(t.Reader, 64<<10), limit)
	return c, nil
}

type lineOrErr struct {
	line    []byte
	tooLong bool
	err     error
}

type stdioConn struct {
	w         io.Writer
	wmu       sync.Mutex
	lines     chan lineOrErr
	closed    chan struct{}
	closeOnce sync.Once
}

// readLines feeds complete lines to c.lines until the reader ends. A line
// over limit is skipped to its end and reported as too long.
func (c *stdioConn) readLines(r *bufio.Reader, limit int) {
	defer close(c.lines)
	for {
		var (
			buf     []byte
			tooLong bool
		)
		for {
			chunk, err := r.ReadSlice('\n')
			if !tooLong {
				if len(buf)+len(chunk) > limit {
					tooLong, buf = true, buf[:0]
				} else {
					buf = append(buf, chunk...)
				}
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil {
				if len(bytes.TrimSpace(buf)) > 0 || tooLong {
					c.deliver(lineOrErr{line: buf, tooLong: tooLong})
				}
				c.deliver(lineOrErr{err: err})
				return
			}
			break
		}
		if !c.deliver(lineOrErr{line: buf, tooLong: tooLong}) {
			return
		}
	}
}

func (c *stdioConn) deliver(l lineOrErr) bool {
	select {
	case c.lines <- l:
		return true
	case <-c.closed:
		return false
	}
}

// Read returns the next valid message, answering and skipping bad lines.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l, ok := <-c.lines:
			if !ok {
				return nil, io.EOF
			}
			if l.err != nil {
				return nil, l.err
			}
			if l.tooLong {
				if err := c.writeError(nil, jsonrpc.CodeInvalidRequest, "message too large"); err != nil {
					return nil, err
				}
				continue
			}
			line := bytes.TrimSpace(l.line)
			if len(line) == 0 {
				continue
			}
			if !utf8.Valid(line) {
				// JSON is UTF-8 (RFC 8259); the decoder would quietly turn
				// bad bytes into U+FFFD and a write would store them.
				if err := c.writeError(probeID(line), jsonrpc.CodeParseError, "the message is not valid UTF-8"); err != nil {
					return nil, err
				}
				continue
			}
			msg, err := jsonrpc.DecodeMessage(line)
			if err == nil {
				return msg, nil
			}
			code, id := jsonrpc.CodeParseError, json.RawMessage(nil)
			if json.Valid(line) {
				code, id = jsonrpc.CodeInvalidRequest, probeID(line)
			}
			if err := c.writeError(id, code, err.Error()); err != nil {
				return nil, err
			}
		}
	}
}

// writeError writes a JSON-RPC error response with id (null when absent or
// not a valid id).
func (c *stdioConn) writeError(id json.RawMessage, code int, message string) error {
	idText := "null"
	if s := string(bytes.TrimSpace(id)); s != "" && (s[0] == '"' || s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) {
		idText = s
	}
	msg, _ := json.Marshal(message) // a string always encodes
	return c.writeLine([]byte(`{"jsonrpc":"2.0","id":` + idText + `,"error":{"code":` + strconv.Itoa(code) + `,"message":` + string(msg) + `}}`))
}

// Write writes one message as a line.
func (c *stdioConn) Write(_ context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeLine(data)
}

func (c *stdioConn) writeLine(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(append(data, '\n')); err != nil {
		return err
	}
	return nil
}

// Close stops reading; the underlying reader and writer stay open.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements mcp.Connection; stdio connections have none.
func (c *stdioConn) SessionID() string { return "" }

// probeID returns the "id" member of a message that is a JSON object, nil
// otherwise, so an error can answer the request it concerns.
func probeID(line []byte) json.RawMessage {
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &probe) != nil {
		return nil
	}
	return probe.ID
}
