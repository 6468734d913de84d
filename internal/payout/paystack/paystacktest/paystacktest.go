// Package paystacktest is a fake Paystack for tests: an httptest server that
// validates every request against Paystack's own OpenAPI document
// (testdata/paystack/openapi.yaml) and fails the test on one the document does
// not allow, so the client is held to what Paystack publishes. It answers the
// bank list and name enquiry as the document's schemas and examples show (its
// own answers are validated against the document too), with knobs for the
// faults a real provider has: a refused key, a server error, an answer that
// never comes, an account the bank does not know.
package paystacktest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Key is the secret key the fake accepts.
const Key = "sk_test_paystacktest"

// Fault is how the fake misbehaves.
type Fault int

// The faults.
const (
	// None answers as Paystack does.
	None Fault = iota
	// RefuseKey answers 401 Invalid key (the document's Unauthorized example).
	RefuseKey
	// ServerError answers 500.
	ServerError
	// Hang never answers: the request waits until the client gives up.
	Hang
)

// Bank is a bank of the fake's list.
type Bank struct{ Code, Name string }

// Banks is the fake's default list.
var Banks = []Bank{
	{"044", "Access Bank"}, {"023", "Citibank Nigeria"}, {"050", "Ecobank Nigeria"}, {"011", "First Bank of Nigeria"},
	{"058", "Guaranty Trust Bank"}, {"033", "United Bank For Africa"}, {"057", "Zenith Bank"},
}

// Server is the fake.
type Server struct {
	*httptest.Server
	t      testing.TB
	router routers.Router

	mu       sync.Mutex
	fault    Fault
	banks    []Bank
	perPage  int
	accounts map[string]string // bank code + "/" + number → holder's name
	calls    map[string]int
	// onViolation is called with a request the document does not allow (default: t.Errorf).
	onViolation func(error)
	hang        chan struct{}
}

// spec loads the document once per process.
var spec = sync.OnceValues(func() (*openapi3.T, error) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "testdata", "paystack", "openapi.yaml")
	l := openapi3.NewLoader()
	doc, err := l.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	// The document names https://api.paystack.co as its server; the fake serves
	// the same paths on its own address, so requests are routed by path alone.
	doc.Servers = nil
	// The one change to the document: it types /bank/resolve's account_number and
	// bank_code as integers, but NUBAN numbers and CBN bank codes are strings of
	// digits with leading zeros ("0123456789", "058"; the bank list's code is a
	// string), which kin-openapi parses as (invalid) octal. They are read as
	// strings of digits instead, which is what Paystack's own examples send.
	op := doc.Paths.Find("/bank/resolve")
	if op == nil || op.Get == nil {
		return nil, fmt.Errorf("%s: no GET /bank/resolve", path)
	}
	for _, p := range op.Get.Parameters {
		if p.Value != nil && (p.Value.Name == "account_number" || p.Value.Name == "bank_code") {
			p.Value.Schema = openapi3.NewSchemaRef("", openapi3.NewStringSchema().WithPattern("^[0-9]+$"))
		}
	}
	return doc, nil
})

// New starts a fake Paystack with the default banks and no accounts; it stops
// when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	doc, err := spec()
	if err != nil {
		t.Fatal(err)
	}
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("route Paystack's document: %v", err)
	}
	s := &Server{t: t, router: r, banks: append([]Bank(nil), Banks...), perPage: 0, accounts: map[string]string{},
		calls: map[string]int{}, hang: make(chan struct{})}
	s.onViolation = func(err error) { t.Errorf("paystacktest: a request Paystack's document does not allow: %v", err) }
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.hang)
		s.Close()
	})
	return s
}

// SetFault makes every following answer f.
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// AddAccount makes accountNumber at bankCode resolve to name.
func (s *Server) AddAccount(bankCode, accountNumber, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accounts[bankCode+"/"+accountNumber] = name
}

// SetPageSize makes the bank list answer at most n banks a page (0: the perPage asked for).
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.perPage = n
}

// OnViolation replaces what happens on a request the document does not allow
// (by default the test fails): for a test of the validator itself.
func (s *Server) OnViolation(f func(error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onViolation = f
}

// Calls returns how many requests path received.
func (s *Server) Calls(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path]
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls[r.URL.Path]++
	fault, violation := s.fault, s.onViolation
	s.mu.Unlock()
	route, params, err := s.router.FindRoute(r)
	if err != nil {
		violation(fmt.Errorf("%s %s: %w", r.Method, r.URL, err))
		s.write(w, nil, http.StatusNotFound, map[string]any{"status": false, "message": "Entity not found"})
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{MultiError: true, AuthenticationFunc: bearer}}
	if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
		violation(fmt.Errorf("%s %s: %w", r.Method, r.URL, err))
		s.write(w, in, http.StatusBadRequest, map[string]any{"status": false, "message": "Request does not match Paystack's document"})
		return
	}
	switch {
	case fault == Hang:
		select {
		case <-r.Context().Done():
		case <-s.hang:
		}
		return
	case fault == ServerError:
		s.write(w, in, http.StatusInternalServerError, map[string]any{"status": false, "message": "An error occurred"})
		return
	case fault == RefuseKey || r.Header.Get("Authorization") != "Bearer "+Key:
		s.write(w, in, http.StatusUnauthorized, map[string]any{"status": false, "message": "Invalid key"})
		return
	}
	switch route.Operation.OperationID {
	case "bank_list":
		s.listBanks(w, in)
	case "bank_resolveAccountNumber":
		s.resolve(w, in)
	default:
		s.t.Errorf("paystacktest: %s %s is in the document but the fake does not serve it", r.Method, r.URL.Path)
		s.write(w, in, http.StatusNotFound, map[string]any{"status": false, "message": "Entity not found"})
	}
}

// bearer checks the document's bearerAuth: an Authorization header of the Bearer scheme.
func bearer(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	h := in.RequestValidationInput.Request.Header.Get("Authorization")
	if !strings.HasPrefix(h, "Bearer ") || strings.TrimSpace(strings.TrimPrefix(h, "Bearer ")) == "" {
		return fmt.Errorf("security %s: no Bearer authorization", in.SecuritySchemeName)
	}
	return nil
}

func (s *Server) listBanks(w http.ResponseWriter, in *openapi3filter.RequestValidationInput) {
	q := in.Request.URL.Query()
	s.mu.Lock()
	banks := append([]Bank(nil), s.banks...)
	size := s.perPage
	s.mu.Unlock()
	if q.Get("country") != "" && q.Get("country") != "nigeria" || q.Get("currency") != "" && q.Get("currency") != "NGN" {
		banks = nil
	}
	if n, err := strconv.Atoi(q.Get("perPage")); err == nil && n > 0 && (size == 0 || n < size) {
		size = n
	}
	if size == 0 {
		size = 50
	}
	start := 0
	if n := q.Get("next"); n != "" {
		start, _ = strconv.Atoi(strings.TrimPrefix(n, "cursor:"))
	}
	start = min(max(start, 0), len(banks))
	end := min(start+size, len(banks))
	data := make([]map[string]any, 0, end-start)
	for i, b := range banks[start:end] {
		data = append(data, map[string]any{
			"name": b.Name, "slug": strings.ToLower(strings.ReplaceAll(b.Name, " ", "-")), "code": b.Code, "longcode": b.Code + "150000",
			"gateway": nil, "pay_with_bank": false, "supports_transfer": true, "available_for_direct_debit": false, "active": true,
			"is_deleted": false, "country": "Nigeria", "currency": "NGN", "type": "nuban", "id": start + i + 1,
			"createdAt": "2016-07-14T10:04:29.000Z", "updatedAt": "2020-02-18T08:06:44.000Z",
		})
	}
	body := map[string]any{"status": true, "message": "Banks retrieved", "data": data}
	if q.Get("use_cursor") == "true" {
		var next any
		if end < len(banks) {
			next = "cursor:" + strconv.Itoa(end)
		}
		body["meta"] = map[string]any{"next": next, "previous": nil, "perPage": size}
	}
	s.write(w, in, http.StatusOK, body)
}

func (s *Server) resolve(w http.ResponseWriter, in *openapi3filter.RequestValidationInput) {
	q := in.Request.URL.Query()
	number, code := q.Get("account_number"), q.Get("bank_code")
	s.mu.Lock()
	name, ok := s.accounts[code+"/"+number]
	s.mu.Unlock()
	if !ok {
		// Paystack's answer for an account it cannot resolve (not in the document,
		// which leaves it to its default response).
		s.write(w, in, http.StatusUnprocessableEntity, map[string]any{"status": false,
			"message": "Could not resolve account name. Check parameters or try again.", "type": "validation_error", "code": "invalid_bank_code"})
		return
	}
	s.write(w, in, http.StatusOK, map[string]any{"status": true, "message": "Account number resolved",
		"data": map[string]any{"account_number": number, "account_name": name, "bank_id": 9}})
}

// write answers body with status, first checking it against the document's
// response (the fake answers only what Paystack's document allows).
func (s *Server) write(w http.ResponseWriter, in *openapi3filter.RequestValidationInput, status int, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		s.t.Errorf("paystacktest: %v", err)
	}
	if in != nil {
		h := http.Header{"Content-Type": {"application/json"}}
		rv := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: h,
			Options: &openapi3filter.Options{IncludeResponseStatus: true}}
		rv.SetBodyBytes(b)
		if err := openapi3filter.ValidateResponse(in.Request.Context(), rv); err != nil {
			s.t.Errorf("paystacktest: the fake's own answer is outside Paystack's document: %v", err)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
