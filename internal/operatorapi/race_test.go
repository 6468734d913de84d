package operatorapi_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// raceN is how many actions race for one transaction.
const raceN = 20

// race runs raceN actions at once (released together) and returns how many
// answered each status, failing on any answer that is not 200 or a 409
// invalid_state_transition.
func race(t *testing.T, what string, action func(i int) (status int, code string, body []byte)) map[int]int {
	t.Helper()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		counts = map[int]int{}
		start  = make(chan struct{})
	)
	for i := range raceN {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			status, code, body := action(i)
			mu.Lock()
			defer mu.Unlock()
			counts[status]++
			if status != http.StatusOK {
				if status != http.StatusConflict || code != string(oc.ErrorCodeInvalidStateTransition) {
					t.Errorf("%s #%d: %d %s", what, i, status, body)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	return counts
}

// racers are the operators whose actions race: four, each with its own key.
func racers(t *testing.T, env *apitest.Env) []*oc.ClientWithResponses {
	t.Helper()
	ops := make([]*oc.ClientWithResponses, 4)
	for i := range ops {
		ops[i] = env.OperatorClient(t, env.NewOperator(t))
	}
	return ops
}

// Concurrent operator fills, settles and simulator completions of one transaction,
// each with its own Idempotency-Key (and operator): exactly one succeeds, every
// other one is 409 invalid_state_transition, never a 500 from a key the loser's
// insert would break (a second fill, a second revenue row).
func TestConcurrentActionsOneWins(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
		ctx := context.Background()
		pc := env.Client(t, env.NewPartner(t))
		ops := racers(t, env)
		fill := func(id uuid.UUID) func(i int) (int, string, []byte) {
			return func(i int) (int, string, []byte) {
				res, err := ops[i%len(ops)].FillOrderWithResponse(ctx, id, &oc.FillOrderParams{IdempotencyKey: key()},
					oc.FillRequest{Rate: "1500.00", FiatAmount: "5000.00", Reference: fmt.Sprintf("fill-%d", i)})
				require.NoError(t, err)
				return res.StatusCode(), codeOf(res.JSON409), res.Body
			}
		}
		settle := func(id uuid.UUID, i int) (int, string, []byte) {
			res, err := ops[i%len(ops)].SettleOrderWithResponse(ctx, id, &oc.SettleOrderParams{IdempotencyKey: key()},
				oc.ReferenceRequest{Reference: fmt.Sprintf("settle-%d", i)})
			require.NoError(t, err)
			return res.StatusCode(), codeOf(res.JSON409), res.Body
		}
		complete := func(id uuid.UUID, _ int) (int, string, []byte) {
			res, err := pc.SimulateSandboxEventWithResponse(ctx, &client.SimulateSandboxEventParams{}, client.SimulateRequest{Event: client.SimulateRequestEventTransactionCompleted, TransactionId: id})
			require.NoError(t, err)
			code := ""
			if res.JSON409 != nil {
				code = string(res.JSON409.Error.Code)
			}
			return res.StatusCode(), code, res.Body
		}
		oneWins := func(what string, counts map[int]int) {
			t.Helper()
			require.Equal(t, map[int]int{http.StatusOK: 1, http.StatusConflict: raceN - 1}, counts, what)
		}

		// Fills of one confirmed deposit; then settles and simulator completions of
		// the filled order, mixed.
		a := create(t, pc, "RACE-A-"+uuid.NewString(), "5000.00")
		confirmDeposit(t, env, a.Id)
		oneWins("fills", race(t, "fill", fill(a.Id)))
		oneWins("settles and completions", race(t, "settle or complete", func(i int) (int, string, []byte) {
			if i%2 == 0 {
				return settle(a.Id, i)
			}
			return complete(a.Id, i)
		}))
		require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:confirmed", "order:filled", "order:settled"}, reasons(partnerHistory(t, pc, a.Id)))

		// Settles alone, and simulator completions alone.
		b := create(t, pc, "RACE-B-"+uuid.NewString(), "5000.00")
		confirmDeposit(t, env, b.Id)
		oneWins("fill b", race(t, "fill", fill(b.Id)))
		oneWins("settles", race(t, "settle", func(i int) (int, string, []byte) { return settle(b.Id, i) }))
		c := create(t, pc, "RACE-C-"+uuid.NewString(), "5000.00")
		confirmDeposit(t, env, c.Id)
		oneWins("fill c", race(t, "fill", fill(c.Id)))
		oneWins("completions", race(t, "complete", func(i int) (int, string, []byte) { return complete(c.Id, i) }))
	})
}

func codeOf(e *oc.Error) string {
	if e == nil {
		return ""
	}
	return string(e.Error.Code)
}
