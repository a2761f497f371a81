package testenv

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The audit policy: every request, metadata only. Tests read the log to see
// exactly which requests a component made and which were refused.
// SubjectAccessReviews are logged with their bodies: a component that
// authorizes its callers through the apiserver (metrics served behind
// controller-runtime's filter) asks about another identity, and only the
// body says whom, for what, and the answer. TokenReviews stay metadata only:
// their bodies carry tokens.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  resources:
  - group: authorization.k8s.io
    resources: [subjectaccessreviews]
- level: Metadata
`

// AuditEvent is the part of a kube-apiserver audit event tests look at.
type AuditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	// UserAgent tells the replicas of a component apart (libs/runtime
	// puts the pod's name in it).
	UserAgent      string          `json:"userAgent"`
	ObjectRef      *AuditObjectRef `json:"objectRef"`
	ResponseStatus *AuditStatus    `json:"responseStatus"`
	RequestURI     string          `json:"requestURI"`
	// StageTimestamp is when the apiserver finished the request (RFC 3339,
	// microseconds): a test's failure message can order events with it.
	StageTimestamp string `json:"stageTimestamp"`
	// RequestReceivedTimestamp is when the apiserver received it.
	RequestReceivedTimestamp string `json:"requestReceivedTimestamp"`
	// RequestObject and ResponseObject are logged for SubjectAccessReviews only.
	RequestObject  json.RawMessage `json:"requestObject,omitempty"`
	ResponseObject json.RawMessage `json:"responseObject,omitempty"`
}

// AuditObjectRef is the object a request was about.
type AuditObjectRef struct {
	Resource    string `json:"resource"`
	Subresource string `json:"subresource"`
	APIGroup    string `json:"apiGroup"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
}

// AuditStatus is the HTTP status the apiserver answered with.
type AuditStatus struct {
	Code int `json:"code"`
}

func (e *Env) configureAudit() error {
	policy := filepath.Join(e.Dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return err
	}
	e.AuditLogPath = filepath.Join(e.Dir, "audit.log")
	args := e.envtest.ControlPlane.GetAPIServer().Configure()
	args.Set("audit-policy-file", policy)
	args.Set("audit-log-path", e.AuditLogPath)
	args.Set("audit-log-format", "json")
	// Write each event as it happens, so a test sees it at once.
	args.Set("audit-log-mode", "blocking")
	// Never rotate: readers read this one file, and the apiserver's log
	// writer rotates at 100 MB when no size is given (a benchmark's
	// update logs gigabytes), leaving the older events in backups no
	// reader opens.
	args.Set("audit-log-maxsize", "1000000")
	return nil
}

// AuditEvents reads the audit log (Options.AuditLog) and returns the events
// of the given user, e.g. "system:serviceaccount:<namespace>:<name>".
func (e *Env) AuditEvents(username string) ([]AuditEvent, error) {
	return e.AuditEventsWhere(func(ev AuditEvent) bool { return ev.User.Username == username })
}

// AuditEventsWhere reads the audit log (Options.AuditLog) and returns the
// events keep keeps.
func (e *Env) AuditEventsWhere(keep func(AuditEvent) bool) ([]AuditEvent, error) {
	if e.AuditLogPath == "" {
		return nil, fmt.Errorf("the audit log is off: start the Env with Options{AuditLog: true}")
	}
	f, err := os.Open(e.AuditLogPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditEvent
	r := bufio.NewReaderSize(f, 1024*1024)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// A last line without its newline is still being written by
			// the apiserver: it is read next time, whole.
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", e.AuditLogPath, err)
		}
		var ev AuditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("reading %s: %w", e.AuditLogPath, err)
		}
		if keep(ev) {
			out = append(out, ev)
		}
	}
}
