package mcpserver_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/cmd/harness/internal/mcpserver"
	"github.com/dsh-go/harness/services/sandbox"
)

// TestEndOfInputWaitsForAnswers (issue 14, item 1): the input ends while a
// call runs; the connection stays up until that call's answer is written,
// then ends cleanly.
func TestEndOfInputWaitsForAnswers(t *testing.T) {
	b := newBlocking()
	p := startPipe(t, mcpserver.Options{Workspace: t.TempDir()}, `{}`, b.tool())
	p.call(t, 1, "block")
	<-b.started
	require.NoError(t, p.in.Close())
	select {
	case err := <-p.done:
		t.Fatalf("the server stopped (%v) before answering the call in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	b.release <- struct{}{}
	m := p.await(t, func(m pipeMsg) bool { return m.Result != nil || m.Error != nil })
	assert.Equal(t, "1", string(m.ID))
	assert.Equal(t, "released", resultText(m))
	select {
	case err := <-p.done:
		assert.NoError(t, err)
		p.done <- err // for the cleanup
	case <-time.After(pipeWait):
		t.Fatal("the server did not stop once every call was answered")
	}
}

// TestEndOfInputRefusesRequestsToClient (issue 14, item 1): a call waiting
// for the user's approval when the input ends is not left hanging: the
// approval fails at once as unavailable and the call is answered.
func TestEndOfInputRefusesRequestsToClient(t *testing.T) {
	p := startPipe(t, mcpserver.Options{Workspace: t.TempDir()}, `{"elicitation":{}}`, asking)
	p.call(t, 1, "ask")
	p.await(t, func(m pipeMsg) bool { return m.Method == "elicitation/create" })
	require.NoError(t, p.in.Close())
	m := p.await(t, func(m pipeMsg) bool { return m.Result != nil || m.Error != nil })
	assert.Equal(t, "1", string(m.ID))
	assert.Equal(t, string(sandbox.Unavailable), resultText(m))
}

// TestClientElicitationErrorIsTheClients: a client whose elicitation
// handler fails answers with a JSON-RPC internal error (-32603, the code of
// the made-up answer a closed input gets too). It is reported as the
// client's error, with its message, not as a missing approval channel.
func TestClientElicitationErrorIsTheClients(t *testing.T) {
	p := startPipe(t, mcpserver.Options{Workspace: t.TempDir()}, `{"elicitation":{}}`, asking)
	p.call(t, 1, "ask")
	req := p.await(t, func(m pipeMsg) bool { return m.Method == "elicitation/create" })
	p.send(t, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32603,"message":"the approval dialog crashed"}}`)
	m := p.await(t, func(m pipeMsg) bool { return m.Result != nil || m.Error != nil })
	assert.Equal(t, "1", string(m.ID))
	assert.Contains(t, resultText(m), "the approval dialog crashed")
	assert.NotEqual(t, string(sandbox.Unavailable), resultText(m))
}
