package azuresim

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

func runtimePollOptions() runtime.PollUntilDoneOptions {
	return runtime.PollUntilDoneOptions{Frequency: 10 * time.Millisecond}
}

func asResponseError(err error, re **azcore.ResponseError) bool { return errors.As(err, re) }

func readClaims(t *testing.T, tok string) (aud, appid string, roles []string) {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Aud   string   `json:"aud"`
		AppID string   `json:"appid"`
		Roles []string `json:"roles"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c.Aud, c.AppID, c.Roles
}
