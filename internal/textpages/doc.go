// Package textpages keeps an idle process's resident set to what it uses
// of its own executable (Shrink). It decides nothing about containment.
package textpages
