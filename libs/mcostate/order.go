package mcostate

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ZoneLabel is the label the MCO orders a pool's update candidates by.
const ZoneLabel = corev1.LabelTopologyZone

// UpdateOrderKey is what the MCO's node controller orders update candidates
// by when it cannot take them all (its sortNodeList): nodes with the zone
// label first, by zone; nodes without it last; within either, oldest first.
// The name breaks the remaining ties so that the order is total (the MCO's
// own sort leaves them unordered). A label present with an empty value
// counts as a zone, as it does for the MCO.
type UpdateOrderKey struct {
	Zone    string
	HasZone bool
	Created time.Time
	Name    string
}

// UpdateOrderKeyOf reads a node's key.
func UpdateOrderKeyOf(n *corev1.Node) UpdateOrderKey {
	zone, ok := n.Labels[ZoneLabel]
	return UpdateOrderKey{Zone: zone, HasZone: ok, Created: n.CreationTimestamp.Time, Name: n.Name}
}

// CompareUpdateOrder orders two keys as the MCO picks candidates: negative
// when a goes first.
func CompareUpdateOrder(a, b UpdateOrderKey) int {
	if a.HasZone != b.HasZone {
		if a.HasZone {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.Zone, b.Zone); c != 0 {
		return c
	}
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// SortForUpdate sorts nodes in the MCO's candidate order, reading each
// node's key once rather than on every comparison.
func SortForUpdate(nodes []*corev1.Node) {
	type keyed struct {
		key  UpdateOrderKey
		node *corev1.Node
	}
	ks := make([]keyed, len(nodes))
	for i, n := range nodes {
		ks[i] = keyed{UpdateOrderKeyOf(n), n}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return CompareUpdateOrder(a.key, b.key) })
	for i := range ks {
		nodes[i] = ks[i].node
	}
}
