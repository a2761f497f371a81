package silence

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	httptransport "github.com/go-openapi/runtime/client"
	"github.com/go-openapi/strfmt"
	amclient "github.com/prometheus/alertmanager/api/v2/client"
	amsilence "github.com/prometheus/alertmanager/api/v2/client/silence"
	"github.com/prometheus/alertmanager/api/v2/models"
)

// Client lists and changes silences through Alertmanager's own API v2 client.
type Client struct {
	api     *amclient.AlertmanagerAPI
	hc      *http.Client
	timeout time.Duration
}

// NewClient serves base, the URL in front of /api/v2 (a proxy's path prefix
// is kept). hc carries authentication and TLS; nil means http.DefaultClient.
// timeout bounds each request.
func NewClient(base string, hc *http.Client, timeout time.Duration) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("alertmanager URL: %w", err)
	}
	if u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("alertmanager URL %q: want scheme://host[/prefix]", base)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	tr := httptransport.NewWithClient(u.Host, u.Path+amclient.DefaultBasePath, []string{u.Scheme}, hc)
	return &Client{api: amclient.New(tr, strfmt.Default), hc: hc, timeout: timeout}, nil
}

func (c *Client) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.timeout)
}

// List returns the silences matching filter (Alertmanager's matcher syntax,
// applied by the server to each silence's matchers), in every state.
func (c *Client) List(ctx context.Context, filter []string) ([]Silence, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	res, err := c.api.Silence.GetSilences(amsilence.NewGetSilencesParamsWithContext(ctx).WithHTTPClient(c.hc).WithFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("listing Alertmanager silences: %w", err)
	}
	out := make([]Silence, 0, len(res.Payload))
	for _, g := range res.Payload {
		if g == nil {
			continue
		}
		out = append(out, fromGettable(g))
	}
	return out, nil
}

// Post creates the silence, or updates it when id is set; it returns the ID
// Alertmanager gives it (a new one when Alertmanager cannot update in place:
// other matchers, or the silence expired meanwhile).
func (c *Client) Post(ctx context.Context, id string, s Silence) (string, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	start, end := strfmt.DateTime(s.StartsAt), strfmt.DateTime(s.EndsAt)
	createdBy, comment := s.CreatedBy, s.Comment
	ps := &models.PostableSilence{ID: id, Silence: models.Silence{
		Matchers: toModel(s.Matchers), StartsAt: &start, EndsAt: &end, CreatedBy: &createdBy, Comment: &comment,
	}}
	res, err := c.api.Silence.PostSilences(amsilence.NewPostSilencesParamsWithContext(ctx).WithHTTPClient(c.hc).WithSilence(ps))
	if err != nil {
		return "", fmt.Errorf("posting Alertmanager silence: %w", err)
	}
	return res.Payload.SilenceID, nil
}

// Expire expires the silence. One that is gone already counts as expired.
func (c *Client) Expire(ctx context.Context, id string) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	_, err := c.api.Silence.DeleteSilence(amsilence.NewDeleteSilenceParamsWithContext(ctx).WithHTTPClient(c.hc).WithSilenceID(strfmt.UUID(id)))
	if _, gone := errors.AsType[*amsilence.DeleteSilenceNotFound](err); gone {
		return nil
	}
	if err != nil {
		return fmt.Errorf("expiring Alertmanager silence %s: %w", id, err)
	}
	return nil
}

// Apply executes a plan in order and returns the IDs to record in status by
// purpose: p.Record with the IDs of created (and re-created) silences filled
// in. It stops at the first error and returns what is known so far, so the
// caller can record the silences that do exist; the next reconcile lists
// them anyway, and re-adopts them through their lease marker.
func (c *Client) Apply(ctx context.Context, p Plan) (map[Purpose]string, error) {
	record := make(map[Purpose]string, len(p.Record))
	for k, v := range p.Record {
		record[k] = v
	}
	for _, a := range p.Actions {
		switch a.Kind {
		case Expire:
			if err := c.Expire(ctx, a.ID); err != nil {
				return record, err
			}
		case Create, Extend, Replace:
			id, err := c.Post(ctx, a.ID, a.Silence)
			if err != nil {
				return record, err
			}
			record[a.Purpose] = id
		default:
			return record, fmt.Errorf("unknown silence action %q", a.Kind)
		}
	}
	return record, nil
}

// Reconcile lists the owner's silences, decides, and applies: the whole
// lease step for one reconcile. in.Existing is filled from Alertmanager.
func (c *Client) Reconcile(ctx context.Context, in Input) (map[Purpose]string, Plan, error) {
	existing, err := c.List(ctx, OwnerFilter(in.Owner.UID))
	if err != nil {
		return in.Recorded, Plan{}, err
	}
	in.Existing = existing
	p := Decide(in)
	record, err := c.Apply(ctx, p)
	return record, p, err
}

func toModel(ms []Matcher) models.Matchers {
	out := make(models.Matchers, len(ms))
	for i, m := range ms {
		name, value, isRegex, isEqual := m.Name, m.Value, m.IsRegex, m.IsEqual
		out[i] = &models.Matcher{Name: &name, Value: &value, IsRegex: &isRegex, IsEqual: &isEqual}
	}
	return out
}

func fromGettable(g *models.GettableSilence) Silence {
	s := Silence{ID: deref(g.ID), CreatedBy: deref(g.CreatedBy), Comment: deref(g.Comment)}
	if g.StartsAt != nil {
		s.StartsAt = time.Time(*g.StartsAt)
	}
	if g.EndsAt != nil {
		s.EndsAt = time.Time(*g.EndsAt)
	}
	if g.Status != nil && g.Status.State != nil {
		s.State = State(*g.Status.State)
	}
	for _, m := range g.Matchers {
		if m == nil {
			continue
		}
		mm := Matcher{Name: deref(m.Name), Value: deref(m.Value), IsEqual: true}
		if m.IsRegex != nil {
			mm.IsRegex = *m.IsRegex
		}
		// Absent isEqual means equal (older servers never send it).
		if m.IsEqual != nil {
			mm.IsEqual = *m.IsEqual
		}
		s.Matchers = append(s.Matchers, mm)
	}
	return s
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
