package mcpserver

// Elicitation exposes elicitation to the tests.
var Elicitation = elicitation
