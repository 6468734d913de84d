package rpc

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestParseLogsAnswerAgreesWithEncodingJSON: the single-pass reader and
// encoding/json agree on every answer the former accepts, and it gives up on the
// shapes it does not know (errors, escapes, nesting, envelope-less bodies), which
// then go through the classifier.
func TestParseLogsAnswerAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	accepted := []string{
		`{"jsonrpc":"2.0","id":7,"result":[]}`,
		`{"jsonrpc":"2.0","id":"x","result":null}`,
		`{"id":1,"jsonrpc":"2.0","result":[{"address":"0xa6","topics":["0xdd","0x01","0x02"],"data":"0x10","blockNumber":"0x5","transactionHash":"0xt","transactionIndex":"0x0","blockHash":"0xb","logIndex":"0x0","removed":false}]}`,
		" {\n \"result\" : [ { \"logIndex\":\"0x1\", \"blockNumber\":\"0x2\", \"blockHash\":\"0xb\", \"transactionHash\":\"0xt\", \"transactionIndex\":\"0x1\", \"address\":\"0x41a6\", \"data\":\"0x\", \"topics\":[], \"removed\":true, \"extra\":[1,2.5e3,null,\"s\"] } , {\"address\":null,\"topics\":null} ] , \"id\" : 3 , \"error\":null } \n",
	}
	for _, a := range accepted {
		got, ok := parseLogsAnswer([]byte(a))
		if !ok {
			t.Fatalf("gave up on %s", a)
		}
		var want struct {
			Result []rawLog `json:"result"`
		}
		if err := json.Unmarshal([]byte(a), &want); err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 && len(want.Result) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want.Result) {
			t.Fatalf("%s:\n got %+v\nwant %+v", a, got, want.Result)
		}
	}
	for _, a := range []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"query returned more than 10000 results"}}`,
		`{"jsonrpc":"2.0","id":1,"result":[{"address":"0x\u0041"}]}`,
		`{"jsonrpc":"2.0","id":1,"result":[{"address":"0xa","x":{"y":1}}]}`,
		`{"jsonrpc":"2.0","id":1,"result":[{"address":"0xa"}]`,
		`{"jsonrpc":"2.0","id":1,"result":[{"address":"0xa"}]} x`,
		`{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","id":1,"result":[],"message":"rate limited"}`,
		`{"Error":"class java.lang.IllegalAccessException : lack of computing resources"}`,
		`<html>502</html>`,
	} {
		if _, ok := parseLogsAnswer([]byte(a)); ok {
			t.Fatalf("accepted %s", a)
		}
	}
}
