package mcpdriver_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/driver/mcpdriver"
	"github.com/agentos-run/agentos/internal/mcptest"
)

// Issue 25 item 7: refusing a 200 MB MCP result brought the process to
// 628 MB: the whole answer was buffered before anything looked at its
// size. A server's answer over mcpdriver.MaxResultBytes is cut off while
// it streams in, with an error saying so, and the heap stays bounded.
func TestHugeMCPResultRefusedWhileStreaming(t *testing.T) {
	s := mcptest.NewServer()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	const huge = 200 << 20
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"tools/call"`)) {
			h.ServeHTTP(w, r)
			return
		}
		// A tools/call: a 200 MB text result, written in chunks.
		w.Header().Set("Content-Type", "application/json")
		id := "1"
		if i := bytes.Index(body, []byte(`"id":`)); i >= 0 {
			rest := body[i+5:]
			id = string(rest[:bytes.IndexAny(rest, ",}")])
		}
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"`)
		chunk := strings.Repeat("x", 1<<20)
		for range huge >> 20 {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, `"}]}}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer func() {
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	}()

	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	c := newClient(t, mcpdriver.Options{Servers: map[string]mcpdriver.Server{"big": {URL: srv.URL + "/mcp", Timeout: 60 * time.Second}}})
	_, err := call(t, c, "big", "add", `{"a":1,"b":1}`)
	close(stop)
	wg.Wait()
	t.Logf("heap peak %d MB; error: %v", peak>>20, err)
	if err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("a 200 MB result: %v, want an error saying it is over the limit", err)
	}
	if peak > 150<<20 {
		t.Errorf("the heap reached %d MB refusing a 200 MB result, want it bounded (under 150 MB)", peak>>20)
	}
}
