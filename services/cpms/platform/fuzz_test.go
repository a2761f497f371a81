package platform

import (
	"bytes"
	"testing"
)

// FuzzProviderSpec feeds any bytes as a control-plane provider spec (a
// Machine's, written by a person or another controller) and checks what the
// planner relies on: detecting, comparing, reading and injecting the failure
// domain never panic; a spec compares equal to itself; injecting a zero
// failure domain changes nothing; injecting the failure domain a spec
// already has neither changes what is compared nor the failure domain read
// back.
func FuzzProviderSpec(f *testing.F) {
	for _, s := range []string{
		awsSpec,
		`{"kind":"AWSMachineProviderConfig","placement":{"availabilityZone":"eu-west-1b"},"subnet":{"id":"subnet-9"}}`,
		`{"kind":"AWSMachineProviderConfig","subnet":{"arn":"arn:aws:ec2:x"},"unknownField":[1,{"a":null}]}`,
		`{"kind":"AzureMachineProviderSpec","zone":"2","subnet":"c1-master-subnet","vmSize":"Standard_D8s_v3"}`,
		`{"kind":"GCPMachineProviderSpec","zone":"us-central1-f","machineType":"n2-standard-4"}`,
		`{"kind":"NutanixMachineProviderConfig","cluster":{"type":"name","name":"pe1"},"subnets":[{"type":"uuid","uuid":"u-1"}],"failureDomain":{"name":"fd-1"}}`,
		`{"kind":"NutanixMachineProviderConfig","cluster":{"type":"uuid"},"memorySize":"16Gi","failureDomain":null}`,
		vsphereMachineSpec,
		vsphereTemplateSpec,
		`{"kind":"VSphereMachineProviderSpec","workspace":{"server":"vc","resourcePool":"/a//b/"},"network":{"devices":[{"networkName":"n","addressesFromPools":[{"name":"p"}],"nameservers":["1.1.1.1"]},{"ipAddrs":["10.0.0.9/24"]}]}}`,
		openstackSpec,
		`{"kind":"OpenstackProviderSpec","availabilityZone":"az1","rootVolume":{}}`,
		`{"kind":"OpenstackProviderSpec","RootVolume":{"volumeType":"fast"}}`,
		`{"kind":"BareMetalMachineProviderSpec","image":{"url":"http://x"}}`,
		`{"kind":"GCPMachineProviderSpec","zone":7}`,
		`{}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, spec []byte) {
		p, err := Detect(nil, spec)
		if err != nil {
			return
		}
		d, _, err := Compare(p, spec, spec)
		if err != nil {
			return // not a spec this platform can read: refused, never compared
		}
		if len(d) != 0 {
			t.Fatalf("a spec differs from itself: %s", d.Summary(5))
		}
		same, err := p.Inject(spec, FailureDomain{})
		if err != nil || !bytes.Equal(same, spec) {
			t.Fatalf("injecting no failure domain changed the spec: %q, %v", same, err)
		}
		fd, err := p.FailureDomain(spec)
		if err != nil || fd.IsZero() {
			return
		}
		again, err := p.Inject(spec, fd)
		if err != nil {
			t.Fatalf("injecting the spec's own failure domain %s: %v", fd, err)
		}
		if d, _, err := Compare(p, spec, again); err != nil || len(d) != 0 {
			t.Fatalf("injecting the spec's own failure domain %s changed it: %v %v", fd, d.Summary(5), err)
		}
		back, err := p.FailureDomain(again)
		if err != nil || !fd.Matches(back) {
			t.Fatalf("failure domain %s read back as %s (%v)", fd, back, err)
		}
	})
}
