package flags

import (
	"reflect"
	"testing"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]string
		want Flags
	}{
		{"missing flags take ARO's defaults, not false", nil,
			Flags{Checker: true, SubnetsEnabled: true, NSGManaged: true, Machine: true, ServiceEndpointManaged: true}},
		{"values are case-insensitive", map[string]string{CheckerEnabled: "FALSE", NSGManaged: "False", SubnetsEnabled: " True "},
			Flags{Checker: false, SubnetsEnabled: true, NSGManaged: false, Machine: true, ServiceEndpointManaged: true}},
		{"a preconfigured NSG turns remediation off", map[string]string{NSGManaged: "false"},
			Flags{Checker: true, SubnetsEnabled: true, NSGManaged: false, Machine: true, ServiceEndpointManaged: true}},
		{"unreadable values take the default and are reported", map[string]string{CheckerEnabled: "yes", NSGManaged: "0"},
			Flags{Checker: true, SubnetsEnabled: true, NSGManaged: true, Machine: true, ServiceEndpointManaged: true, Invalid: []string{"aro.azuresubnets.nsg.managed=0", "aro.checker.enabled=yes"}}},
		{"the Machine controller switched off", map[string]string{MachineEnabled: "false"},
			Flags{Checker: true, SubnetsEnabled: true, NSGManaged: true, Machine: false, ServiceEndpointManaged: true}},
		{"service endpoints left alone", map[string]string{ServiceEndpointManaged: "false"},
			Flags{Checker: true, SubnetsEnabled: true, NSGManaged: true, Machine: true, ServiceEndpointManaged: false}},
		{"other flags are ignored", map[string]string{"aro.azuresubnetsnsg.enabled": "false", "aro.banner.enabled": "true"},
			Flags{Checker: true, SubnetsEnabled: true, NSGManaged: true, Machine: true, ServiceEndpointManaged: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Read(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Read(%v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}
