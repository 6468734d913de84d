// Compiled by make check-clients beside the types openapi-typescript generates from
// the two contracts (partner.ts, operator.ts). It uses them as an integrator would,
// and each @ts-expect-error line must be an error: were a type generated as `any`
// or `unknown`, or an enum as a plain string, the directive would be unused and
// tsc would fail.
import type { components as P, paths as PartnerPaths } from "./partner";
import type { components as O } from "./operator";

type Transaction = P["schemas"]["TransactionDetail"];
type Status = P["schemas"]["TransactionStatus"];
type ErrorBody = P["schemas"]["Error"];
type Quote = P["schemas"]["Quote"];
type AuditEntry = O["schemas"]["AuditEntry"];
type Overview = O["schemas"]["OverviewResponse"];

// Every status is handled: a status added to the contract breaks this switch.
export function label(s: Status): string {
  switch (s) {
    case "awaiting_deposit": return "Waiting for the deposit";
    case "deposit_confirming": return "Confirming";
    case "order_filled": return "Filled";
    case "completed": return "Completed";
    case "cancelled": return "Cancelled";
    case "failed": return "Failed";
    case "expired": return "Expired";
    case "refunded": return "Refunded";
    default: {
      const never: never = s;
      return never;
    }
  }
}

// Money is a decimal string, never a number.
export function total(q: Quote): string {
  const amount: string = q.amount;
  // @ts-expect-error amounts are strings, not numbers
  const wrong: number = q.fiat_amount;
  return amount + String(wrong);
}

export function describe(t: Transaction): string {
  // @ts-expect-error a status outside the contract's list is refused
  const bogus: Status = "on_hold";
  const confirmations: number | null = t.confirmations;
  return `${label(t.status)} ${t.deposit_status ?? "no deposit"} ${confirmations ?? 0} ${bogus}`;
}

export function code(e: ErrorBody): P["schemas"]["ErrorCode"] {
  // @ts-expect-error the error code is a closed list
  const made: P["schemas"]["ErrorCode"] = "oops";
  return e.error.code ?? made;
}

// The answer of GET /transactions/{id} is the TransactionDetailOK response.
type GetTransaction = PartnerPaths["/transactions/{id}"]["get"]["responses"][200]["content"]["application/json"];
export function unwrap(r: GetTransaction): Transaction {
  return r.data;
}

// The audit log's action is an open list: any string, so new actions still decode.
export function action(a: AuditEntry): string {
  const s: string = a.action;
  // @ts-expect-error the entry's operator id is a string
  const n: number = a.operator_id;
  return s + n;
}

export function networks(o: Overview): string[] {
  return o.data.networks.map((n) => n.network);
}
