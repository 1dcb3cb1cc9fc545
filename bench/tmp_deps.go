package main

import (
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "gonum.org/v1/plot"
)

func main() {}
