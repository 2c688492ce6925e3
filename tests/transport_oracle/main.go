// The oracle of tests/test_transport.py: Go's own HTTP/1.1 client (net/http.Transport, as
// kubectl's client-go uses it) GETs each URL given, in order, on one Transport (kept-alive
// connections reused as Go reuses them), and prints one JSON line per request: the status and
// body it read, or that it refused the answer. An argument sleep:SECONDS waits that long.
package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	client := &http.Client{
		Transport: &http.Transport{DisableCompression: true},
		Timeout:   3 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	out := json.NewEncoder(os.Stdout)
	for _, url := range os.Args[1:] {
		if seconds, ok := strings.CutPrefix(url, "sleep:"); ok {
			d, _ := strconv.ParseFloat(seconds, 64)
			time.Sleep(time.Duration(d * float64(time.Second)))
			continue
		}
		resp, err := client.Get(url)
		if err != nil {
			out.Encode(map[string]any{"error": err.Error()})
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			out.Encode(map[string]any{"error": err.Error()})
			continue
		}
		out.Encode(map[string]any{"status": resp.StatusCode, "body": string(body)})
	}
}
