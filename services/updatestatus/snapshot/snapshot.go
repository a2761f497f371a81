// Package snapshot loads the offline ("mock") input of `kubectl upshift
// status --mock-clusterversion=<dir>/<name>-cv.yaml`: the same set of files
// `oc adm upgrade status --mock-clusterversion` reads, turned
// into an assess.Snapshot.
//
// A snapshot is a family of sibling files sharing the prefix <dir>/<name>:
//
//	<name>-cv.yaml              ClusterVersion            required
//	<name>-co.yaml              ClusterOperators          required
//	<name>-mcp.yaml             MachineConfigPools        required
//	<name>-mc.yaml              MachineConfigs            required
//	<name>-node.yaml            Nodes                     required
//	<name>-alerts.json          Prometheus alerts API     optional
//	<name>-mco-deployment.yaml  MCO Deployment            optional
//
// Every YAML file may hold a single object, a typed list (ClusterOperatorList)
// or a `v1 List`, as `oc get -o yaml` writes them; several YAML documents
// separated by `---` are accepted too. Objects are decoded with the Upshift
// scheme, so anything that is not of the expected kind is reported by name.
package snapshot

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"

	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
)

// ClusterVersionSuffix ends the name of the file that names a snapshot.
const ClusterVersionSuffix = "-cv.yaml"

// nowSkew is added to the latest condition transition to get the snapshot's
// "now". oc adds exactly this odd amount (to exercise its rounding), and its
// fixture outputs depend on it, so we must too.
const nowSkew = 368975 * time.Nanosecond

// Files are the paths of one snapshot's files.
type Files struct {
	ClusterVersion     string
	ClusterOperators   string
	MachineConfigPools string
	MachineConfigs     string
	Nodes              string
	// Alerts and MCODeployment are optional.
	Alerts        string
	MCODeployment string
}

// FilesFor derives the sibling file names from the ClusterVersion file's path.
func FilesFor(cvPath string) (Files, error) {
	prefix, ok := strings.CutSuffix(cvPath, ClusterVersionSuffix)
	if !ok || prefix == "" {
		return Files{}, fmt.Errorf("mock ClusterVersion file %q: its name must end in %q, e.g. 4.18.1-slow%s: the other snapshot files are found from that prefix",
			cvPath, ClusterVersionSuffix, ClusterVersionSuffix)
	}
	return Files{
		ClusterVersion:     cvPath,
		ClusterOperators:   prefix + "-co.yaml",
		MachineConfigPools: prefix + "-mcp.yaml",
		MachineConfigs:     prefix + "-mc.yaml",
		Nodes:              prefix + "-node.yaml",
		Alerts:             prefix + "-alerts.json",
		MCODeployment:      prefix + "-mco-deployment.yaml",
	}, nil
}

// Loaded is a loaded snapshot.
type Loaded struct {
	Files    Files
	Snapshot assess.Snapshot
	// AlertsMissing is true when there is no alerts file: the assessment then
	// runs without alerts (oc says so and goes on).
	AlertsMissing bool
	// AlertsNotice is the line oc prints (on its standard output, before the
	// report) when it ignores the alerts file because it cannot read or
	// parse it; empty when the alerts were read.
	AlertsNotice string
}

// Load reads the snapshot whose ClusterVersion file is cvPath. Its Now is the
// latest lastTransitionTime among the ClusterVersion's and ClusterOperators'
// conditions plus a fixed skew, exactly as oc computes it in this mode, so the
// output does not depend on when the command runs.
func Load(cvPath string) (*Loaded, error) {
	files, err := FilesFor(cvPath)
	if err != nil {
		return nil, err
	}
	out := &Loaded{Files: files}
	s := &out.Snapshot

	cvs, err := readObjects[*configv1.ClusterVersion](files.ClusterVersion, "ClusterVersion", true)
	if err != nil {
		return nil, err
	}
	if len(cvs) != 1 {
		return nil, fmt.Errorf("%s: holds %d ClusterVersions, expected exactly one", files.ClusterVersion, len(cvs))
	}
	s.ClusterVersion = cvs[0]

	if s.ClusterOperators, err = readValues[*configv1.ClusterOperator](files.ClusterOperators, "ClusterOperator"); err != nil {
		return nil, err
	}
	if s.MachineConfigPools, err = readValues[*mcfgv1.MachineConfigPool](files.MachineConfigPools, "MachineConfigPool"); err != nil {
		return nil, err
	}
	if s.MachineConfigs, err = readValues[*mcfgv1.MachineConfig](files.MachineConfigs, "MachineConfig"); err != nil {
		return nil, err
	}
	if s.Nodes, err = readObjects[*corev1.Node](files.Nodes, "Node", true); err != nil {
		return nil, err
	}

	if s.MCOImage, err = readMCOImage(files.MCODeployment); err != nil {
		return nil, err
	}
	s.Alerts, out.AlertsNotice = readAlerts(files.Alerts)
	if _, err := os.Stat(files.Alerts); errors.Is(err, fs.ErrNotExist) {
		out.AlertsMissing = true
	}

	s.Now = latestTransition(s.ClusterVersion, s.ClusterOperators).Add(nowSkew)
	return out, nil
}

// latestTransition is the newest lastTransitionTime of the ClusterVersion's
// and every ClusterOperator's conditions: the moment the snapshot was taken,
// as far as the files can tell.
func latestTransition(cv *configv1.ClusterVersion, cos []configv1.ClusterOperator) time.Time {
	var latest time.Time
	consider := func(conds []configv1.ClusterOperatorStatusCondition) {
		for _, c := range conds {
			if c.LastTransitionTime.After(latest) {
				latest = c.LastTransitionTime.Time
			}
		}
	}
	consider(cv.Status.Conditions)
	for _, co := range cos {
		consider(co.Status.Conditions)
	}
	return latest
}

// readMCOImage returns the image of the MCO container of the Deployment in
// path, or "" when the (optional) file does not exist. A missing file is a
// known empty image, not an unknown one (assess.Snapshot.MCOImageUnknown):
// that is what oc assumes, and offline mode prints what oc prints.
func readMCOImage(path string) (string, error) {
	deployments, err := readObjects[*appsv1.Deployment](path, "Deployment", false)
	if err != nil || deployments == nil {
		return "", err
	}
	if len(deployments) != 1 {
		return "", fmt.Errorf("%s: holds %d Deployments, expected exactly one (the machine-config-operator Deployment)", path, len(deployments))
	}
	if image, ok := assess.DeploymentMCOImage(deployments[0]); ok {
		return image, nil
	}
	return "", fmt.Errorf("%s: Deployment %s has no container named %q", path, deployments[0].Name, assess.MCOContainer)
}

// readValues reads the objects of one kind from a required file and returns
// them by value, as assess.Snapshot holds them.
func readValues[T interface {
	*E
	runtime.Object
}, E any](path, kind string) ([]E, error) {
	objs, err := readObjects[T](path, kind, true)
	if err != nil {
		return nil, err
	}
	out := make([]E, 0, len(objs))
	for _, o := range objs {
		out = append(out, *o)
	}
	return out, nil
}

// The one decoder: it understands every kind of the Upshift scheme and does
// no conversion or defaulting, so objects arrive exactly as written.
var decoder = serializer.NewCodecFactory(scheme.Scheme).UniversalDeserializer()

// readObjects decodes every object of path and checks that each is a T (kind
// names it in errors). A missing optional file yields (nil, nil); a present
// file with no objects yields an empty, non-nil slice.
func readObjects[T interface {
	*E
	runtime.Object
}, E any](path, kind string, required bool) ([]T, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if !required {
				return nil, nil
			}
			return nil, fmt.Errorf("%s: snapshot file is missing (it should hold the %ss of the snapshot)", path, kind)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if items, ok := decodeUniformList[T](data); ok {
		return items, nil
	}
	objs, err := decodeAll(data)
	if err != nil {
		return nil, fmt.Errorf("%s: malformed: %w", path, err)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%s: holds no object; expected a %s, a %sList or a v1 List", path, kind, kind)
	}
	out := []T{}
	for i, obj := range objs {
		items, err := flatten(obj)
		if err != nil {
			return nil, fmt.Errorf("%s: malformed list: %w", path, err)
		}
		for j, item := range items {
			typed, ok := item.(T)
			if !ok {
				return nil, fmt.Errorf("%s: %s is a %s, expected a %s", path, position(len(objs), i, len(items), j), kindOf(item), kind)
			}
			out = append(out, typed)
		}
	}
	return out, nil
}

// decodeUniformList decodes data in one pass when it is what `oc get -o
// yaml` writes for many objects of one kind: a single v1 List whose every
// item is a T. The general path decodes such a list, then each item again,
// reading every item's JSON several times; for the 5,000 Nodes of a large
// cluster that was most of the remaining time. ok is false for anything else
// (several documents, another kind of list, an item of another kind or with
// no kind), which the general path then decodes, and explains if it must.
// What it returns is what the general path returns (the tests compare them).
func decodeUniformList[T interface {
	*E
	runtime.Object
}, E any](data []byte) (items []T, ok bool) {
	if bytes.HasPrefix(data, []byte("---")) || bytes.Contains(data, []byte("\n---")) {
		return nil, false
	}
	json := data
	if !isJSON(data) {
		if json, ok = blockYAMLToJSON(data); !ok {
			return nil, false
		}
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(T(new(E)))
	if err != nil || len(gvks) != 1 {
		return nil, false
	}
	var list struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Items      []E    `json:"items"`
	}
	// The decoder's own JSON reading: case-sensitive, integers kept.
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(json, &list); err != nil || list.APIVersion != "v1" || list.Kind != "List" {
		return nil, false
	}
	items = make([]T, len(list.Items))
	for i := range list.Items {
		items[i] = &list.Items[i]
		if items[i].GetObjectKind().GroupVersionKind() != gvks[0] {
			return nil, false
		}
	}
	return items, true
}

// decodeAll decodes every YAML (or JSON) document of data.
func decodeAll(data []byte) ([]runtime.Object, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []runtime.Object
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if isBlank(raw) {
			continue
		}
		// The decoder converts YAML to JSON itself, with the general YAML
		// parser; a document in the plain block style of `oc get -o yaml`
		// is converted faster here, to the same JSON.
		// (A JSON document is decoded as JSON anyway.)
		if !isJSON(raw) {
			if json, ok := blockYAMLToJSON(raw); ok {
				raw = json
			}
		}
		obj, _, err := decoder.Decode(raw, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		objs = append(objs, obj)
	}
}

// flatten returns the items of a list (a typed list, or a v1 List whose items
// are still raw), or the object itself.
func flatten(obj runtime.Object) ([]runtime.Object, error) {
	if list, ok := obj.(*corev1.List); ok {
		items := make([]runtime.Object, 0, len(list.Items))
		for i, raw := range list.Items {
			if raw.Object != nil {
				items = append(items, raw.Object)
				continue
			}
			item, _, err := decoder.Decode(raw.Raw, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i+1, err)
			}
			items = append(items, item)
		}
		return items, nil
	}
	if meta.IsListType(obj) {
		return meta.ExtractList(obj)
	}
	return []runtime.Object{obj}, nil
}

// position names an object in error messages: "the object", "item 3",
// "document 2", "document 2, item 3".
func position(docs, doc, items, item int) string {
	var parts []string
	if docs > 1 {
		parts = append(parts, fmt.Sprintf("document %d", doc+1))
	}
	if items > 1 {
		parts = append(parts, fmt.Sprintf("item %d", item+1))
	}
	if len(parts) == 0 {
		return "the object"
	}
	return strings.Join(parts, ", ")
}

// kindOf names an object's kind: from the scheme for typed objects (whose
// TypeMeta the decoder may have cleared), else from its Go type.
func kindOf(obj runtime.Object) string {
	if gvks, _, err := scheme.Scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		return gvks[0].Kind
	}
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return reflect.TypeOf(obj).String()
}

// isJSON says whether doc is a JSON object, which the decoder reads
// without converting it.
func isJSON(doc []byte) bool {
	trimmed := bytes.TrimLeft(doc, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '{'
}

func isBlank(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && string(line) != "---" {
			return false
		}
	}
	return true
}

// alertsFile is the part of a saved /api/v1/alerts response the assessment
// reads, decoded with the Prometheus client library's own alert type.
type alertsFile struct {
	Data promv1.AlertsResult `json:"data"`
}

// literalW is printed as is: oc's notice shows a "%w" it meant as a verb.
var literalW = "%w"

// readAlerts reads the alerts file. oc goes on without alerts when it cannot
// read or parse the file, after printing a notice; its exact words are
// returned (a literal "%w" included: oc passes a format verb to Println).
// Like oc, it reads the alerts whatever the response's status field says.
func readAlerts(path string) ([]assess.Alert, string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, AlertsNotice(err)
	}
	var resp alertsFile
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Sprintln("Ignoring alerts in 'Update Health'. Error unmarshaling alerts:", literalW, err)
	}
	return assess.FromAlerts(alerts.FromPrometheus(resp.Data.Alerts)), ""
}

// AlertsNotice is the line oc prints, on its standard output before the
// report, when it cannot read the alerts and goes on without them (the
// double space is oc's: Println between its message and the error).
func AlertsNotice(err error) string {
	return fmt.Sprintln("Unable to fetch alerts, ignoring alerts in 'Update Health': ", err)
}
