package mcpserver

// Elicitation exposes elicitation to the tests.
var Elicitation = elicitation

// Waiting returns how many calls of the HTTP principal named principal
// wait for a call slot.
func (s *Server) Waiting(principal string) int { return s.calls.Waiting("principal:" + principal) }
