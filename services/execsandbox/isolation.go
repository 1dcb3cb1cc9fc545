package execsandbox

// Isolation describes how confined commands run here, for `harness policy`.
type Isolation struct {
	// Kind is IsolationBwrap or IsolationLandlock.
	Kind string `json:"kind"`
	// Bwrap is the bubblewrap executable run by descriptor (IsolationBwrap,
	// when usable).
	Bwrap string `json:"bwrap,omitempty"`
	// Unavailable says why confined commands are refused here ("" when
	// they run).
	Unavailable string `json:"unavailable,omitempty"`
	// Limits says how the memory and process caps are applied.
	Limits string `json:"limits"`
	// RunAs says which user commands run as under the default policy.
	RunAs string `json:"runAs"`
	// Helper says which program each command starts as its helper and
	// inner stage (execlocal.HelperKind).
	Helper string `json:"helper"`
	// NotCovered lists what this isolation does not confine, one line each.
	NotCovered []string `json:"notCovered"`
	// NamedSockets says how commands are kept to the named Unix sockets
	// (Config.UnixSocketPaths) here; "" when none are named.
	NamedSockets string `json:"namedSockets,omitempty"`
	// GPGAgent says how commands reach the gpg-agent (Config.GPGAgent);
	// "" without it.
	GPGAgent string `json:"gpgAgent,omitempty"`
	// Proxied says commands reach the network only through the domain
	// proxy (network deny under bubblewrap), which refuses every host but
	// AllowDomains and the user's grants.
	Proxied bool `json:"proxied,omitempty"`
	// AllowDomains are the names commands reach through the domain proxy
	// under network deny, as the proxy normalized them (lower case,
	// "*.example.com" wildcards); none without it.
	AllowDomains []string `json:"allowDomains,omitempty"`
	// Direct are the names of AllowDomains a program reaches without
	// reading the proxy variables (Node's fetch, ssh), each "name:port"
	// (netproxy.Direct); the hosts the user grants join them, on
	// netproxy.DirectPorts.
	Direct []string `json:"direct,omitempty"`
}
