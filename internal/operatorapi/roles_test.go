package operatorapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/operatorapi"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// call makes one request of each operation through the generated client, with
// the least a request can carry: the role check comes before any other, so what
// is sent does not matter to it.
var call = map[string]func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error){
	"listStage": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, _ *string) (*http.Response, error) {
		return c.ListStage(ctx, &oc.ListStageParams{})
	},
	"getOperatorTransaction": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, _ *string) (*http.Response, error) {
		return c.GetOperatorTransaction(ctx, id)
	},
	"fillOrder": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.FillOrder(ctx, id, &oc.FillOrderParams{IdempotencyKey: *k}, oc.FillRequest{Rate: "1.00", FiatAmount: "1.00", Reference: "R"})
	},
	"settleOrder": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.SettleOrder(ctx, id, &oc.SettleOrderParams{IdempotencyKey: *k}, oc.ReferenceRequest{Reference: "R"})
	},
	"settlePayout": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.SettlePayout(ctx, id, &oc.SettlePayoutParams{IdempotencyKey: *k}, oc.ReferenceRequest{Reference: "R"})
	},
	"failTransaction": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.FailTransaction(ctx, id, &oc.FailTransactionParams{IdempotencyKey: *k}, oc.FailRequest{Reason: "R"})
	},
	"refundTransaction": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.RefundTransaction(ctx, id, &oc.RefundTransactionParams{IdempotencyKey: *k}, oc.RefundRequest{TxHash: "0x" + strings.Repeat("ab", 32)})
	},
	"listUnmatchedDeposits": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, _ *string) (*http.Response, error) {
		return c.ListUnmatchedDeposits(ctx, &oc.ListUnmatchedDepositsParams{})
	},
	"resolveUnmatchedDeposit": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.ResolveUnmatchedDeposit(ctx, id, &oc.ResolveUnmatchedDepositParams{IdempotencyKey: *k}, oc.ResolveRequest{Action: "credited", Note: ptr("n")})
	},
	"acceptShortPayment": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.AcceptShortPayment(ctx, id, &oc.AcceptShortPaymentParams{IdempotencyKey: *k}, oc.AcceptRequest{Reason: "R"})
	},
	"reviewTransaction": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.ReviewTransaction(ctx, id, &oc.ReviewTransactionParams{IdempotencyKey: *k}, oc.ReviewRequest{Decision: oc.Release, Note: "n"})
	},
	"listScreeningReviews": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, _ *string) (*http.Response, error) {
		return c.ListScreeningReviews(ctx, &oc.ListScreeningReviewsParams{})
	},
	"listScreeningLists": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, _ *string) (*http.Response, error) {
		return c.ListScreeningLists(ctx)
	},
	"blockedPropertyReport": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, _ *string) (*http.Response, error) {
		return c.BlockedPropertyReport(ctx)
	},
	"listRefundTasks": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, _ *string) (*http.Response, error) {
		return c.ListRefundTasks(ctx, &oc.ListRefundTasksParams{})
	},
	"resolveRefundTask": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.ResolveRefundTask(ctx, id, &oc.ResolveRefundTaskParams{IdempotencyKey: *k}, oc.ResolveRequest{Action: "credited", Note: ptr("n")})
	},
	"getOverview": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, _ *string) (*http.Response, error) {
		return c.GetOverview(ctx)
	},
	"listAudit": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, _ *string) (*http.Response, error) {
		return c.ListAudit(ctx, &oc.ListAuditParams{})
	},
	"listPayouts": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, _ *string) (*http.Response, error) {
		return c.ListPayouts(ctx, &oc.ListPayoutsParams{})
	},
	"createPayout": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.CreatePayout(ctx, &oc.CreatePayoutParams{IdempotencyKey: *k}, oc.PayoutRequest{PartnerId: id, TransactionIds: []uuid.UUID{id}, Reference: "R", FiatAmount: "1.00"})
	},
	"listFills": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, _ *string) (*http.Response, error) {
		return c.ListFills(ctx, &oc.ListFillsParams{})
	},
	"createFill": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.CreateFill(ctx, &oc.CreateFillParams{IdempotencyKey: *k}, oc.BatchFillRequest{TransactionIds: []uuid.UUID{id}, Rate: "1.00", Reference: "R"})
	},
	"listPartners": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, _ *string) (*http.Response, error) {
		return c.ListPartners(ctx)
	},
	"createPartner": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, k *string) (*http.Response, error) {
		return c.CreatePartner(ctx, &oc.CreatePartnerParams{IdempotencyKey: *k}, oc.NameRequest{})
	},
	"listPartnerKeys": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, _ *string) (*http.Response, error) {
		return c.ListPartnerKeys(ctx, id)
	},
	"createPartnerKey": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.CreatePartnerKey(ctx, id, &oc.CreatePartnerKeyParams{IdempotencyKey: *k}, oc.EmptyRequest{})
	},
	"listPartnerUsers": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, _ *string) (*http.Response, error) {
		return c.ListPartnerUsers(ctx, id)
	},
	"invitePartnerUser": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.InvitePartnerUser(ctx, id, &oc.InvitePartnerUserParams{IdempotencyKey: *k}, oc.InvitePartnerUserRequest{Email: "a@example.com", Role: oc.PartnerUserRoleFinance})
	},
	"resendWebhookBacklog": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.ResendWebhookBacklog(ctx, id, &oc.ResendWebhookBacklogParams{IdempotencyKey: *k})
	},
	"listBanks": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, _ *string) (*http.Response, error) {
		return c.ListBanks(ctx)
	},
	"getSettlementAccount": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, _ *string) (*http.Response, error) {
		return c.GetSettlementAccount(ctx, id)
	},
	"putSettlementAccount": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.PutSettlementAccount(ctx, id, &oc.PutSettlementAccountParams{IdempotencyKey: *k}, oc.SettlementAccountRequest{BankCode: "058", AccountNumber: "0123456789"})
	},
	"rollPartnerKey": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.RollPartnerKey(ctx, id, id, &oc.RollPartnerKeyParams{IdempotencyKey: *k}, oc.RollRequest{})
	},
	"revokePartnerKey": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.RevokePartnerKey(ctx, id, id, &oc.RevokePartnerKeyParams{IdempotencyKey: k})
	},
	"listOperators": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, _ *string) (*http.Response, error) {
		return c.ListOperators(ctx)
	},
	"createOperator": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, k *string) (*http.Response, error) {
		return c.CreateOperator(ctx, &oc.CreateOperatorParams{IdempotencyKey: *k}, oc.OperatorCreateRequest{})
	},
	"setOperatorRoles": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.SetOperatorRoles(ctx, id, &oc.SetOperatorRolesParams{IdempotencyKey: *k}, oc.RolesRequest{})
	},
	"listOperatorKeys": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, _ *string) (*http.Response, error) {
		return c.ListOperatorKeys(ctx, id)
	},
	"createOperatorKey": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.CreateOperatorKey(ctx, id, &oc.CreateOperatorKeyParams{IdempotencyKey: *k}, oc.EmptyRequest{})
	},
	"rollOperatorKey": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.RollOperatorKey(ctx, id, uuid.New(), &oc.RollOperatorKeyParams{IdempotencyKey: *k}, oc.RollRequest{})
	},
	"revokeOperatorKey": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.RevokeOperatorKey(ctx, id, uuid.New(), &oc.RevokeOperatorKeyParams{IdempotencyKey: k})
	},
	"listApprovals": func(ctx context.Context, c oc.ClientInterface, _ uuid.UUID, _ *string) (*http.Response, error) {
		return c.ListApprovals(ctx, &oc.ListApprovalsParams{})
	},
	"getApproval": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, _ *string) (*http.Response, error) {
		return c.GetApproval(ctx, id)
	},
	"approveApproval": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.ApproveApproval(ctx, id, &oc.ApproveApprovalParams{IdempotencyKey: *k}, oc.EmptyRequest{})
	},
	"rejectApproval": func(ctx context.Context, c oc.ClientInterface, id uuid.UUID, k *string) (*http.Response, error) {
		return c.RejectApproval(ctx, id, &oc.RejectApprovalParams{IdempotencyKey: *k}, oc.RejectRequest{Note: "n"})
	},
}

// rule is one row of the contract's roles table.
type rule struct {
	role operators.Role
	self bool
}

// rolesTable reads the table under "Roles" in the operator contract's introduction,
// checking each row against the operation's own x-operator-role.
func rolesTable(t *testing.T) map[string]rule {
	t.Helper()
	spec, err := operatorapi.Spec()
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `(\\w+)` \\| `[A-Z]+ [^`]+` \\| `(\\w+)`( \\(or the operator named by `\\{id\\}` themself\\))? \\|")
	table := map[string]rule{}
	for _, m := range row.FindAllStringSubmatch(spec.Info.Description, -1) {
		table[m[1]] = rule{role: operators.Role(m[2]), self: m[3] != ""}
	}
	ops := 0
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			ops++
			id := strings.ToLower(op.OperationID[:1]) + op.OperationID[1:]
			r, ok := table[id]
			require.True(t, ok, "the roles table has a row for %s", id)
			require.Equal(t, string(r.role), op.Extensions["x-operator-role"], "%s: the table and x-operator-role agree", id)
			self, _ := op.Extensions["x-operator-self"].(bool)
			require.Equal(t, r.self, self, id)
			require.Contains(t, call, id, "the walk calls %s", id)
		}
	}
	require.Len(t, table, ops, "one row per operation")
	require.Len(t, call, ops)
	return table
}

// Each role's allowed and refused operations are the contract's table, for every
// operation: an operator holding one role is refused 403 forbidden (the missing
// role named, nothing changed) exactly where the table names another, and the
// operator a key route names may manage their own keys whatever their roles.
func TestEveryOperationNeedsTheRoleTheContractNames(t *testing.T) {
	t.Parallel()
	table := rolesTable(t)
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
		ctx := context.Background()
		for _, role := range operators.Roles {
			id, k := env.NewOperatorWith(t, "Only "+string(role), role)
			c := env.OperatorClient(t, k).ClientInterface
			for op, r := range table {
				idem := uuid.NewString()
				res, err := call[op](ctx, c, uuid.New(), &idem)
				require.NoError(t, err)
				body, err := io.ReadAll(res.Body)
				require.NoError(t, err)
				res.Body.Close()
				if r.role == operators.Viewer || r.role == role {
					require.NotEqual(t, http.StatusForbidden, res.StatusCode, "%s may %s: %s", role, op, body)
					continue
				}
				require.Equal(t, http.StatusForbidden, res.StatusCode, "%s may not %s: %s", role, op, body)
				var e oc.Error
				require.NoError(t, json.Unmarshal(body, &e))
				require.Equal(t, oc.ErrorCodeForbidden, e.Error.Code)
				require.Equal(t, []oc.ErrorDetail{{Field: "role", Message: string(r.role)}}, e.Error.Details, op)
				if r.self {
					idem = uuid.NewString()
					own, err := call[op](ctx, c, id, &idem)
					require.NoError(t, err)
					own.Body.Close()
					require.NotEqual(t, http.StatusForbidden, own.StatusCode, "%s on their own keys", op)
				}
			}
		}
		// Nothing a refused request asked for exists: only the six operators do.
		list, err := env.OperatorClient(t, env.NewOperator(t)).ListOperatorsWithResponse(ctx)
		require.NoError(t, err)
		require.Len(t, list.JSON200.Data, len(operators.Roles)+1)
	})
}

// The contract's role and action names are the code's.
func TestRoleAndApprovalEnumsInTheContract(t *testing.T) {
	t.Parallel()
	var roles []string
	for _, r := range operators.Roles {
		roles = append(roles, string(r))
		require.True(t, oc.OperatorRole(r).Valid(), r)
	}
	spec, err := operatorapi.Spec()
	require.NoError(t, err)
	var enum []string
	for _, v := range spec.Components.Schemas["OperatorRole"].Value.Enum {
		enum = append(enum, v.(string))
	}
	require.ElementsMatch(t, enum, roles)
}
