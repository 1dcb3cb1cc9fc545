// Package httpauth verifies the bearer tokens of `harness serve --listen`
// (issue 26): a file of hashed static tokens (LoadTokenFile) or JWTs
// checked against a JWKS (NewJWTVerifier), both auth.TokenVerifier values of
// the go-sdk; the middleware that demands a token and answers 401 with
// `WWW-Authenticate` (Middleware); and the RFC 9728 protected-resource
// metadata document (MetadataHandler).
//
// What it protects: who a request is. A request that passes Middleware
// carries an *auth.TokenInfo whose UserID is the token's subject; the
// go-sdk's streamable handler binds each session to it. Tokens are
// compared by their SHA-256 in constant time, and no token, token hash or
// Authorization header is ever logged or put in an error.
//
// What it does not protect: what a subject may do (the principals file,
// elsewhere), the Origin and Host checks against DNS rebinding, request
// sizes, TLS (a bearer token over plain HTTP off loopback can be read on
// the wire), the directory holding the token file (a user who can replace
// the file can add tokens), and a JWKS whose URL or TLS the operator does
// not control. A JWT stays valid until it expires: there is no revocation
// short of removing its signing key from the JWKS.
package httpauth
