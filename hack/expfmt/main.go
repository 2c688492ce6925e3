// hack/expfmt: a reader for tests/render/test_metrics_expfmt.py. It reads a text exposition on stdin
// with expfmt.TextParser from prometheus/common, the parser a Pushgateway (handler/push.go) and
// node-exporter's textfile collector (collector/textfile.go) read pushed and written metrics with,
// and prints what it read as JSON (or the parse error, exit 1). Written for this repository.

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type sample struct {
	Labels    map[string]string `json:"labels"`
	Value     float64           `json:"value"`
	Timestamp bool              `json:"timestamp"`
}

type family struct {
	Name    string   `json:"name"`
	Help    string   `json:"help"`
	Type    string   `json:"type"`
	Samples []sample `json:"samples"`
}

func main() {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	names := make([]string, 0, len(families))
	for name := range families {
		names = append(names, name)
	}
	sort.Strings(names)
	out := []family{}
	for _, name := range names {
		mf := families[name]
		f := family{Name: name, Help: mf.GetHelp(), Type: mf.GetType().String()}
		for _, m := range mf.GetMetric() {
			s := sample{Labels: map[string]string{}, Timestamp: m.TimestampMs != nil}
			for _, l := range m.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.Gauge != nil:
				s.Value = m.Gauge.GetValue()
			case m.Counter != nil:
				s.Value = m.Counter.GetValue()
			case m.Untyped != nil:
				s.Value = m.Untyped.GetValue()
			}
			f.Samples = append(f.Samples, s)
		}
		out = append(out, f)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(2)
	}
}
