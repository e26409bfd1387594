package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentos-run/agentos/governance/approval"
)

// approvalsRoutes are the Approvals pages.
func (s *Server) approvalsRoutes() []route {
	return []route{
		{"GET /approvals", s.page(s.approvalsPage)},
		{"GET /approvals/log", s.page(s.decisionLogPage)},
		{"GET /approvals/{id}", s.page(s.approvalPage)},
		{"POST /approvals/{id}/decide", s.action(s.decide)},
	}
}

// approvalsView is the list's data.
type approvalsView struct {
	// State is the state listed ("all" for every one).
	State    string
	States   []string
	Requests []approval.Request
}

// approvalsPage is GET /approvals[?state=pending|approved|denied|all].
func (s *Server) approvalsPage(w http.ResponseWriter, r *http.Request) {
	v := approvalsView{State: r.URL.Query().Get("state"), States: []string{"pending", "approved", "denied", "all"}}
	if v.State == "" {
		v.State = string(approval.StatePending)
	}
	st := approval.State(v.State)
	if v.State == "all" {
		st = ""
	}
	var err error
	v.Requests, err = s.b.Approvals(r.Context(), sessionOf(r.Context()).who, st)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "approvals.html", v)
}

// approvalView is one request's page; JustDecided says the page shows
// the decision just made (the page a decision redirects to).
type approvalView struct {
	ApprovalDetail
	JustDecided bool
}

// approvalPage is GET /approvals/ID.
func (s *Server) approvalPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.b.Approval(r.Context(), sessionOf(r.Context()).who, r.PathValue("id"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "approval.html", approvalView{ApprovalDetail: d, JustDecided: r.URL.Query().Get("decided") != ""})
}

// decide is POST /approvals/ID/decide (form: decision=approve|deny,
// reason): the decision, then the request's page (303).
func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	var approve bool
	switch d := r.PostFormValue("decision"); d {
	case "approve":
		approve = true
	case "deny":
	default:
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("%w: decision %q: choose approve or deny", ErrBadInput, d))
		return
	}
	id := r.PathValue("id")
	if _, err := s.b.Decide(r.Context(), sessionOf(r.Context()).who, id, approve, r.PostFormValue("reason")); err != nil {
		s.failErr(w, r, err)
		return
	}
	http.Redirect(w, r, "/approvals/"+url.PathEscape(id)+"?decided=1", http.StatusSeeOther)
}

// logView is the decision log's data.
type logView struct {
	Events []approval.Event
	Older  string
	Newer  string
}

// logPage is how many events a page of the decision log shows.
const logPage = 100

// decisionLogPage is GET /approvals/log[?skip=N].
func (s *Server) decisionLogPage(w http.ResponseWriter, r *http.Request) {
	skip := 0
	if v := r.URL.Query().Get("skip"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.fail(w, r, http.StatusBadRequest, fmt.Errorf("%w: skip %q: give a number of events, 0 or more", ErrBadInput, v))
			return
		}
		skip = n
	}
	evs, more, err := s.b.DecisionLog(r.Context(), sessionOf(r.Context()).who, skip, logPage)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	v := logView{Events: evs}
	if more {
		v.Older = "/approvals/log?skip=" + strconv.Itoa(skip+logPage)
	}
	if skip > 0 {
		v.Newer = "/approvals/log?skip=" + strconv.Itoa(max(skip-logPage, 0))
	}
	s.render(w, r, http.StatusOK, "approvals_log.html", v)
}
