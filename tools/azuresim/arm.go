package azuresim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

type subnetState struct {
	subnet armnetwork.Subnet
}

type operation struct {
	subnetID  string // lower-cased
	remaining int
}

// AddNSG creates a network security group.
func (s *Server) AddNSG(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nsgs[strings.ToLower(id)] = id
}

// AddSubnet creates a subnet, associated with nsgID ("" for none).
func (s *Server) AddSubnet(id, addressPrefix, nsgID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := armnetwork.Subnet{
		ID:   to.Ptr(id),
		Name: to.Ptr(id[strings.LastIndex(id, "/")+1:]),
		Type: to.Ptr("Microsoft.Network/virtualNetworks/subnets"),
		Etag: to.Ptr(`W/"` + randomHex(8) + `"`),
		Properties: &armnetwork.SubnetPropertiesFormat{
			AddressPrefix:     to.Ptr(addressPrefix),
			ProvisioningState: to.Ptr(armnetwork.ProvisioningStateSucceeded),
		},
	}
	if nsgID != "" {
		sub.Properties.NetworkSecurityGroup = &armnetwork.SecurityGroup{ID: to.Ptr(nsgID)}
	}
	s.subnets[strings.ToLower(id)] = &subnetState{subnet: sub}
}

// SetSubnetNSG changes a subnet's association out of band, as someone in the
// portal would; "" detaches it.
func (s *Server) SetSubnetNSG(id, nsgID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setNSGLocked(strings.ToLower(id), nsgID)
}

func (s *Server) setNSGLocked(key, nsgID string) {
	st, ok := s.subnets[key]
	if !ok {
		return
	}
	if nsgID == "" {
		st.subnet.Properties.NetworkSecurityGroup = nil
	} else {
		st.subnet.Properties.NetworkSecurityGroup = &armnetwork.SecurityGroup{ID: to.Ptr(nsgID)}
	}
	st.subnet.Etag = to.Ptr(`W/"` + randomHex(8) + `"`)
}

// SubnetNSG is the subnet's associated group ID, "" for none.
func (s *Server) SubnetNSG(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.subnets[strings.ToLower(id)]
	if !ok || st.subnet.Properties.NetworkSecurityGroup == nil || st.subnet.Properties.NetworkSecurityGroup.ID == nil {
		return ""
	}
	return *st.subnet.Properties.NetworkSecurityGroup.ID
}

// SetSubnetServiceEndpoints replaces a subnet's service endpoints out of
// band, each provisioned (Succeeded) for all locations.
func (s *Server) SetSubnetServiceEndpoints(id string, services ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.subnets[strings.ToLower(id)]
	if !ok {
		return
	}
	st.subnet.Properties.ServiceEndpoints = nil
	for _, svc := range services {
		st.subnet.Properties.ServiceEndpoints = append(st.subnet.Properties.ServiceEndpoints, &armnetwork.ServiceEndpointPropertiesFormat{
			Service: to.Ptr(svc), Locations: []*string{to.Ptr("*")}, ProvisioningState: to.Ptr(armnetwork.ProvisioningStateSucceeded)})
	}
	st.subnet.Etag = to.Ptr(`W/"` + randomHex(8) + `"`)
}

// SubnetServiceEndpoints lists the services of a subnet's provisioned
// service endpoints.
func (s *Server) SubnetServiceEndpoints(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.subnets[strings.ToLower(id)]
	if !ok {
		return nil
	}
	var out []string
	for _, e := range st.subnet.Properties.ServiceEndpoints {
		if e.ProvisioningState != nil && *e.ProvisioningState == armnetwork.ProvisioningStateSucceeded {
			out = append(out, *e.Service)
		}
	}
	return out
}

// KeepDetaching plays another actor (an Azure Policy, a script) that detaches
// the subnet's group `after` every successful re-association through ARM.
// after < 0 stops it.
func (s *Server) KeepDetaching(subnetID string, after time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if after < 0 {
		delete(s.actors, strings.ToLower(subnetID))
		return
	}
	s.actors[strings.ToLower(subnetID)] = after
}

// SetPollsPerOperation sets how many status polls a PUT stays InProgress.
func (s *Server) SetPollsPerOperation(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pollsPerOp = n
}

// resource serves /subscriptions/... for subnets and network security groups.
func (s *Server) resource(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Path
	key := strings.ToLower(id)
	if r.URL.Query().Get("api-version") == "" {
		armError(w, http.StatusBadRequest, "MissingApiVersionParameter", "The api-version query parameter (?api-version=) is required for all requests.", 0)
		return
	}
	if f, ok := s.nextFault(r.Method, id); ok {
		if f.Delay > 0 {
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
				return
			}
		}
		if f.Status != 0 {
			armError(w, f.Status, f.Code, fmt.Sprintf("Scripted fault %d %s.", f.Status, f.Code), f.RetryAfter)
			return
		}
	}
	switch {
	case strings.Contains(key, "/providers/microsoft.network/virtualnetworks/") && strings.Contains(key, "/subnets/"):
		switch r.Method {
		case http.MethodGet:
			s.getSubnet(w, key)
		case http.MethodPut:
			s.putSubnet(w, r, key)
		default:
			armError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The method is not allowed here.", 0)
		}
	case strings.Contains(key, "/providers/microsoft.network/networksecuritygroups/") && r.Method == http.MethodGet:
		s.mu.Lock()
		orig, ok := s.nsgs[key]
		s.mu.Unlock()
		if !ok {
			armError(w, http.StatusNotFound, "ResourceNotFound", fmt.Sprintf("The Resource '%s' was not found.", id), 0)
			return
		}
		writeJSON(w, http.StatusOK, armnetwork.SecurityGroup{ID: to.Ptr(orig), Name: to.Ptr(orig[strings.LastIndex(orig, "/")+1:]),
			Properties: &armnetwork.SecurityGroupPropertiesFormat{ProvisioningState: to.Ptr(armnetwork.ProvisioningStateSucceeded)}})
	default:
		armError(w, http.StatusNotFound, "InvalidResourceType", "The resource type could not be found.", 0)
	}
}

func (s *Server) getSubnet(w http.ResponseWriter, key string) {
	s.mu.Lock()
	st, ok := s.subnets[key]
	var body []byte
	if ok {
		body, _ = json.Marshal(st.subnet)
	}
	s.mu.Unlock()
	if !ok {
		armError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("Resource %s not found.", key), 0)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (s *Server) putSubnet(w http.ResponseWriter, r *http.Request, key string) {
	var in armnetwork.Subnet
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		armError(w, http.StatusBadRequest, "InvalidRequestFormat", "Cannot parse the request: "+err.Error(), 0)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.subnets[key]
	if !ok {
		// Creating subnets is not part of what is simulated.
		armError(w, http.StatusNotFound, "NotFound", "Creating subnets is not simulated.", 0)
		return
	}
	nsgID := ""
	if in.Properties != nil && in.Properties.NetworkSecurityGroup != nil && in.Properties.NetworkSecurityGroup.ID != nil {
		nsgID = *in.Properties.NetworkSecurityGroup.ID
		if _, ok := s.nsgs[strings.ToLower(nsgID)]; !ok {
			armError(w, http.StatusBadRequest, "InvalidResourceReference", fmt.Sprintf("Resource %s referenced by resource %s was not found.", nsgID, r.URL.Path), 0)
			return
		}
	}
	s.setNSGLocked(key, nsgID)
	if in.Properties != nil && in.Properties.AddressPrefix != nil {
		st.subnet.Properties.AddressPrefix = in.Properties.AddressPrefix
	}
	// A PUT replaces the subnet's service endpoints with those it carries
	// (none when it carries none): an endpoint already provisioned for the
	// same service stays provisioned, a new one is Updating until the
	// operation ends.
	var endpoints []*armnetwork.ServiceEndpointPropertiesFormat
	if in.Properties != nil {
		for _, e := range in.Properties.ServiceEndpoints {
			if e == nil || e.Service == nil {
				armError(w, http.StatusBadRequest, "InvalidRequestFormat", "A service endpoint has no service.", 0)
				return
			}
			state := armnetwork.ProvisioningStateUpdating
			for _, old := range st.subnet.Properties.ServiceEndpoints {
				if strings.EqualFold(*old.Service, *e.Service) && old.ProvisioningState != nil && *old.ProvisioningState == armnetwork.ProvisioningStateSucceeded {
					state = armnetwork.ProvisioningStateSucceeded
				}
			}
			endpoints = append(endpoints, &armnetwork.ServiceEndpointPropertiesFormat{Service: e.Service, Locations: e.Locations, ProvisioningState: to.Ptr(state)})
		}
	}
	st.subnet.Properties.ServiceEndpoints = endpoints
	st.subnet.Properties.ProvisioningState = to.Ptr(armnetwork.ProvisioningStateUpdating)
	s.opSeq++
	opID := fmt.Sprintf("op-%d", s.opSeq)
	s.ops[opID] = &operation{subnetID: key, remaining: s.pollsPerOp}
	body, _ := json.Marshal(st.subnet)
	w.Header().Set("Azure-AsyncOperation", fmt.Sprintf("%s/operations/%s?api-version=%s", s.srv.URL, opID, r.URL.Query().Get("api-version")))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

func (s *Server) operationStatus(w http.ResponseWriter, id string) {
	s.mu.Lock()
	op, ok := s.ops[id]
	if !ok {
		s.mu.Unlock()
		armError(w, http.StatusNotFound, "OperationNotFound", "The operation was not found.", 0)
		return
	}
	if op.remaining > 0 {
		op.remaining--
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]string{"status": "InProgress"})
		return
	}
	st := s.subnets[op.subnetID]
	st.subnet.Properties.ProvisioningState = to.Ptr(armnetwork.ProvisioningStateSucceeded)
	for _, e := range st.subnet.Properties.ServiceEndpoints {
		e.ProvisioningState = to.Ptr(armnetwork.ProvisioningStateSucceeded)
	}
	attached := st.subnet.Properties.NetworkSecurityGroup != nil
	after, acting := s.actors[op.subnetID]
	delete(s.ops, id)
	s.mu.Unlock()
	if attached && acting {
		key := op.subnetID
		time.AfterFunc(after, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if _, still := s.actors[key]; still {
				s.setNSGLocked(key, "")
			}
		})
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "Succeeded"})
}
