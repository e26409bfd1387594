package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// runsRoutes are the Runs and Debug pages.
func (s *Server) runsRoutes() []route {
	return []route{
		{"GET /runs", s.page(s.runsPage)},
		{"GET /runs/events", s.page(s.runsEvents)},
		{"GET /runs/{id}", s.page(s.runPage)},
		{"GET /runs/{id}/debug", s.page(s.debugPage)},
		{"POST /runs/{id}/replay", s.action(s.replay)},
		{"POST /runs/{id}/save", s.action(s.saveFix)},
	}
}

// defaultPage and maxPage bound a page of runs.
const (
	defaultPage = 50
	maxPage     = 500
)

// runsView is the list's data.
type runsView struct {
	Q           RunQuery
	Since, Till string
	Page        RunPage
	Older       string // the next older page's URL
	Newer       string
	Filtered    bool
}

// parseRunQuery reads the list's query string.
func parseRunQuery(v url.Values) (RunQuery, error) {
	q := RunQuery{
		Before: v.Get("before"), After: v.Get("after"),
		Kind: v.Get("kind"), Tool: v.Get("tool"), Status: v.Get("status"), Node: v.Get("node"),
		Limit: defaultPage,
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxPage {
			return q, fmt.Errorf("%w: limit %q: give a number of runs from 1 to %d", ErrBadInput, l, maxPage)
		}
		q.Limit = n
	}
	if q.Before != "" && q.After != "" {
		return q, fmt.Errorf("%w: give before or after, not both", ErrBadInput)
	}
	var err error
	if q.Since, err = parseTime(v.Get("since")); err != nil {
		return q, err
	}
	if q.Until, err = parseTime(v.Get("until")); err != nil {
		return q, err
	}
	return q, nil
}

// parseTime reads a time as the form's datetime-local field (local time)
// or RFC 3339 sends it; "" is the zero time.
func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: time %q: give it as 2026-01-02T15:04 or RFC 3339", ErrBadInput, s)
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	q, err := parseRunQuery(r.URL.Query())
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	page, err := s.b.ListRuns(r.Context(), sessionOf(r.Context()).who, q)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	v := runsView{Q: q, Page: page, Filtered: q.Kind != "" || q.Tool != "" || q.Status != "" || q.Node != "" || !q.Since.IsZero() || !q.Until.IsZero()}
	if !q.Since.IsZero() {
		v.Since = q.Since.Local().Format("2006-01-02T15:04")
	}
	if !q.Until.IsZero() {
		v.Till = q.Until.Local().Format("2006-01-02T15:04")
	}
	if page.Before != "" {
		v.Older = pageURL(r.URL.Query(), "before", page.Before)
	}
	if page.After != "" {
		v.Newer = pageURL(r.URL.Query(), "after", page.After)
	}
	s.render(w, r, http.StatusOK, "runs.html", v)
}

// pageURL is the list's URL with the filters of q and one cursor.
func pageURL(q url.Values, key, id string) string {
	q = maps(q)
	q.Del("before")
	q.Del("after")
	q.Set(key, id)
	return "/runs?" + q.Encode()
}

func maps(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.b.Run(r.Context(), sessionOf(r.Context()).who, r.PathValue("id"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "run.html", d)
}

// runEvent is one server-sent event of the list: a run that appeared or
// changed status.
type runEvent struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Tool     string `json:"tool"`
	Status   string `json:"status"`
	Started  string `json:"started"`
	Duration string `json:"duration"`
	Calls    int    `json:"calls"`
	Node     string `json:"node"`
}

// liveWindow is how many of the newest runs the stream watches.
const liveWindow = 20

// runsEvents streams the runs that start or end (text/event-stream): the
// newest runs matching the list's filters, polled every Options.Poll.
func (s *Server) runsEvents(w http.ResponseWriter, r *http.Request) {
	q, err := parseRunQuery(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q.Before, q.After, q.Limit = "", "", liveWindow
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	who := sessionOf(r.Context()).who
	seen := map[string]string{}
	first := true
	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	for {
		if err := s.b.Verify(r.Context(), who); err != nil {
			return
		}
		page, err := s.b.ListRuns(r.Context(), who, q)
		if err == nil {
			s.sendChanged(w, page.Runs, seen, first)
			fl.Flush()
			first = false
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-tick.C:
		}
	}
}

// sendChanged writes an event for each run not seen with its status
// (none on the first look: the page already shows those), oldest first.
func (s *Server) sendChanged(w http.ResponseWriter, runs []RunSummary, seen map[string]string, first bool) {
	for i := len(runs) - 1; i >= 0; i-- {
		m := runs[i]
		if st, ok := seen[m.ID]; ok && st == m.Status {
			continue
		}
		seen[m.ID] = m.Status
		if first {
			continue
		}
		b, _ := json.Marshal(runEvent{ID: m.ID, Kind: m.Kind, Tool: m.Tool, Status: m.Status, Started: when(m.Started), Duration: dur(m.Duration()), Calls: m.Calls, Node: m.Node})
		fmt.Fprintf(w, "event: run\ndata: %s\n\n", b)
	}
	if len(seen) > 4*liveWindow { // forget the runs that left the window
		keep := map[string]bool{}
		for _, m := range runs {
			keep[m.ID] = true
		}
		for id := range seen {
			if !keep[id] {
				delete(seen, id)
			}
		}
	}
	fmt.Fprint(w, ": ping\n\n")
}
