package host

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestSearchIndexKeptWhileToolsAreTheSame(t *testing.T) {
	weather := &mcp.Tool{Name: "forecast", Description: "Weather forecast for a city", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}
	echo := &mcp.Tool{Name: "echo", Description: "Echo the input"}
	keys := []searchKey{{server: "w", tool: weather}, {server: "e", tool: echo}, {server: savedServer, name: "clean_rows", description: "Drop empty rows"}}

	var c searchIndex
	ix := c.index(keys)
	if again := c.index(append([]searchKey(nil), keys...)); again != ix {
		t.Error("the same tools built a new index")
	}
	if hits := ix.Search("city", 1); len(hits) != 1 || hits[0].Doc.Tool != "forecast" {
		t.Errorf("Search(city) = %v, want forecast, found by its parameter's name", hits)
	}
	if hits := ix.Search("empty rows", 1); len(hits) != 1 || hits[0].Doc.Server != savedServer {
		t.Errorf("Search(empty rows) = %v, want the saved helper", hits)
	}

	// A server listing again hands out new tools: the index follows.
	relisted := *echo
	relisted.Description = "Repeat the message back"
	changed := []searchKey{keys[0], {server: "e", tool: &relisted}, keys[2]}
	ix2 := c.index(changed)
	if ix2 == ix {
		t.Fatal("a new listing kept the old index")
	}
	if hits := ix2.Search("repeat message", 1); len(hits) != 1 || hits[0].Doc.Tool != "echo" {
		t.Errorf("after relisting, Search(repeat message) = %v, want echo", hits)
	}
	// A saved helper changing its text counts too.
	resaved := []searchKey{keys[0], keys[1], {server: savedServer, name: "clean_rows", description: "Remove blank lines"}}
	if c.index(resaved) == ix2 {
		t.Error("a changed saved helper kept the old index")
	}
}
