package platform

import (
	configv1 "github.com/openshift/api/config/v1"
)

// generic compares provider specs of any other kind as canonical JSON: key
// order, nulls, empty objects and empty lists do not count. It knows no
// failure domains and ignores no field.
type generic struct{}

func (generic) Type() configv1.PlatformType { return "" }

func (generic) FailureDomain([]byte) (FailureDomain, error) { return FailureDomain{}, nil }

func (generic) Inject(spec []byte, _ FailureDomain) ([]byte, error) { return spec, nil }

func (generic) canonical(spec []byte) (map[string]any, []string, error) {
	if len(spec) == 0 {
		return map[string]any{}, nil, nil
	}
	tree, err := decodeTree(spec)
	return tree, nil, err
}
