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
// that survives bad input: a line that is not JSON, not a JSON-RPC message
// (a response with neither result nor error included), or longer than
// MaxLineBytes is answered with a JSON-RPC error (parse error -32700 or
// invalid request -32600, with the request's id when it can be read, else
// null) and the connection goes on with the next line. The SDK's own stdio
// transport ends the connection at the first such line.
//
// It also keeps two promises the SDK's connection does not:
//   - Every request read before the input ends is answered before the
//     connection reports the end, so a client that writes its requests and
//     closes its side still reads every answer. A request the server sends
//     the client after the end (an elicitation, roots/list) is not written:
//     it fails at once with errInputClosed, as does one still unanswered at
//     the end.
//   - A request the client cancels (notifications/cancelled) gets no
//     response: its answer, if it comes after the cancellation was read, is
//     dropped (MCP "Cancellation": receivers should not send a response).
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
	c := &stdioConn{
		w: t.Writer, lines: make(chan lineOrErr), closed: make(chan struct{}),
		inbound: map[jsonrpc.ID]bool{}, outbound: map[jsonrpc.ID]struct{}{}, wake: make(chan struct{}),
	}
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

	mu sync.Mutex
	// inbound holds the requests read and not yet answered; true marks one
	// the client cancelled, whose answer is dropped.
	inbound map[jsonrpc.ID]bool
	// outbound holds the requests sent to the client and not yet answered.
	outbound map[jsonrpc.ID]struct{}
	// inputErr is why the input ended (io.EOF at the end of the stream),
	// nil while it lasts.
	inputErr error
	// refused are the answers made up for requests to the client that can
	// no longer be answered, for Read to return.
	refused []jsonrpc.Message
	// wake is closed and replaced when inbound empties or refused grows
	// after the input ended.
	wake chan struct{}
}

// errInputClosed answers a request to the client that can no longer be
// answered because the client's input to the server ended.
var errInputClosed = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the client's stream ended: no answer can come"}

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
// Once the input ends it returns the made-up answers of requests to the
// client, then waits until every request read has been answered, and only
// then reports the end.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if msg, wake, err := c.drain(); msg != nil || wake != nil || err != nil {
			if wake != nil {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-c.closed:
					return nil, io.EOF
				case <-wake:
				}
				continue
			}
			return msg, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l, ok := <-c.lines:
			if !ok {
				c.endInput(io.EOF)
				continue
			}
			if l.err != nil {
				c.endInput(l.err)
				continue
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
			if resp, ok := msg.(*jsonrpc.Response); ok && err == nil && resp.Error == nil && resp.Result == nil {
				// Neither a request (no method) nor a response (no result,
				// no error): an invalid request, answered with its id.
				err = errors.New("the message has neither a method nor a result nor an error")
			}
			if err == nil {
				c.received(msg)
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

// Write writes one message as a line. An answer to a cancelled request is
// dropped; a request to the client after the input ended is not written and
// gets errInputClosed as its answer.
func (c *stdioConn) Write(_ context.Context, msg jsonrpc.Message) error {
	var answered jsonrpc.ID
	switch m := msg.(type) {
	case *jsonrpc.Response:
		c.mu.Lock()
		cancelled, known := c.inbound[m.ID]
		c.mu.Unlock()
		if cancelled {
			c.answered(m.ID)
			return nil
		}
		if known {
			answered = m.ID
		}
	case *jsonrpc.Request:
		if m.IsCall() {
			c.mu.Lock()
			if c.inputErr != nil {
				c.refuse(m.ID)
				c.mu.Unlock()
				return nil
			}
			c.outbound[m.ID] = struct{}{}
			c.mu.Unlock()
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err == nil {
		err = c.writeLine(data)
	}
	if answered.IsValid() {
		// Only once the answer is written may the end of the input be
		// reported (and the process exit).
		c.answered(answered)
	}
	return err
}

// received records what a message read means for the requests in flight:
// a request to answer, the client's answer to ours, or a cancellation.
func (c *stdioConn) received(msg jsonrpc.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.IsCall() {
			c.inbound[m.ID] = false
			return
		}
		if m.Method != "notifications/cancelled" {
			return
		}
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &p) != nil {
			return
		}
		if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
			if _, ok := c.inbound[id]; ok {
				c.inbound[id] = true
			}
		}
	case *jsonrpc.Response:
		delete(c.outbound, m.ID)
	}
}

// answered forgets request id once its answer is written or dropped.
func (c *stdioConn) answered(id jsonrpc.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.inbound, id)
	if len(c.inbound) == 0 && c.inputErr != nil {
		c.signal()
	}
}

// endInput records that the input ended with err and fails every request
// to the client still waiting for an answer.
func (c *stdioConn) endInput(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inputErr = err
	for id := range c.outbound {
		c.refuse(id)
	}
	clear(c.outbound)
}

// refuse queues the errInputClosed answer of request id; c.mu is held.
func (c *stdioConn) refuse(id jsonrpc.ID) {
	c.refused = append(c.refused, &jsonrpc.Response{ID: id, Error: errInputClosed})
	c.signal()
}

// signal wakes a Read waiting after the end of the input; c.mu is held.
func (c *stdioConn) signal() {
	close(c.wake)
	c.wake = make(chan struct{})
}

// drain reports what Read returns next once the input ended: a made-up
// answer, the end (err) once every request read was answered, or, while
// some are not, the channel to wait on. All are nil while the input lasts.
func (c *stdioConn) drain() (msg jsonrpc.Message, wait <-chan struct{}, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.inputErr == nil:
		return nil, nil, nil
	case len(c.refused) > 0:
		msg, c.refused = c.refused[0], c.refused[1:]
		return msg, nil, nil
	case len(c.inbound) == 0:
		return nil, nil, c.inputErr
	}
	return nil, c.wake, nil
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
