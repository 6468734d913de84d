package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"partnerd/internal/lifecycle"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit"
	"partnerd/internal/web/webkit/webtest"
)

// Text people typed cannot move what an operator confirms, in real Chromium on
// both databases: a partner named "999 שלום" and a merchant reference
// "5000 עסקה" (right to left, with digits) sit each in its own <bdi> on the
// transaction page and on the fill's confirmation page, where the amounts are
// drawn in their places (the reference, then the partner, then the amount with
// its currency, left to right) — the same words without the isolates are drawn
// with the amount pulled before the partner's name, which the check would see.
// The reference the operator typed is isolated on the confirmation page and in
// the history; a screening list's source name is shown with its controls made
// visible.
func TestConsoleIsolatesTypedText(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) { isolationFlow(t, db) })
	}
}

// box is where a piece of text is drawn: the union of its glyphs' boxes.
type box struct{ Left, Right, Top, Bottom float64 }

// boxesJS returns, for the element sel, the drawn box of the first occurrence
// of each text (at or after the previous one's start), or null for a text it
// does not hold.
const boxesJS = `((sel, needles) => {
  const root = document.querySelector(sel);
  if (!root) return null;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT), nodes = [];
  let text = '';
  while (walker.nextNode()) { nodes.push([walker.currentNode, text.length]); text += walker.currentNode.data; }
  const at = (off, end) => {
    for (const [n, o] of nodes) {
      if (off >= o && (off < o + n.data.length || (end && off === o + n.data.length))) return [n, off - o];
    }
  };
  let from = 0;
  return needles.map(needle => {
    const start = text.indexOf(needle, from);
    if (start < 0) return null;
    from = start;
    const r = document.createRange(), s = at(start, false), e = at(start + needle.length, true);
    r.setStart(s[0], s[1]); r.setEnd(e[0], e[1]);
    const rects = Array.from(r.getClientRects()).filter(x => x.width > 0);
    return {Left: Math.min(...rects.map(x => x.left)), Right: Math.max(...rects.map(x => x.right)),
      Top: Math.min(...rects.map(x => x.top)), Bottom: Math.max(...rects.map(x => x.bottom))};
  });
})`

// boxes measures needles in the element sel (boxesJS).
func boxes(t *testing.T, ctx context.Context, sel string, needles ...string) []box {
	t.Helper()
	var out []*box
	q := `(` + boxesJS + `)(` + jsString(sel) + `, [`
	for i, n := range needles {
		if i > 0 {
			q += ", "
		}
		q += jsString(n)
	}
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(q+`])`, &out)))
	require.Len(t, out, len(needles), "%s is on the page", sel)
	res := make([]box, len(out))
	for i, b := range out {
		require.NotNil(t, b, "%s holds %q", sel, needles[i])
		res[i] = *b
	}
	return res
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + "'"
}

// requireInOrder requires the boxes drawn left to right on one line, each
// after the one before it.
func requireInOrder(t *testing.T, what string, names []string, bs []box) {
	t.Helper()
	for i := 1; i < len(bs); i++ {
		require.True(t, bs[i].Top < bs[0].Bottom && bs[i].Bottom > bs[0].Top, "%s: %q on the line of %q (%+v, %+v)",
			what, names[i], names[0], bs[0], bs[i])
		require.LessOrEqual(t, bs[i-1].Right, bs[i].Left+0.5, "%s: %q is drawn after %q (%+v, %+v)", what, names[i], names[i-1], bs[i-1], bs[i])
	}
}

// bdis is the text of every <bdi> under sel.
func bdis(t *testing.T, ctx context.Context, sel string) []string {
	t.Helper()
	var out []string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`Array.from(document.querySelectorAll(`+jsString(sel+" bdi")+`)).map(b => b.textContent)`, &out)))
	return out
}

func isolationFlow(t *testing.T, db testdb.Database) {
	env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
	const name, ref, lpRef = "999 שלום", "5000 עסקה", "LP 42 שלום"
	_, key, err := env.App.Partners().CreateAlone(context.Background(), name)
	require.NoError(t, err)
	tx := create(t, env.Client(t, key), ref, "250000.50")
	require.Equal(t, lifecycle.Counted, pay(t, env, tx, tx.CryptoAmount, 1))
	usdt := webkit.Amount(tx.CryptoAmount)

	ctx := webtest.Browser(t)
	base := env.Root + "/console"
	signIn(t, ctx, base, env.NewOperator(t))
	page := base + "/transactions/" + tx.Id.String()

	// The transaction page: the reference and the partner's name in isolates.
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(page), chromedp.WaitVisible("#fill-form", chromedp.ByID)))
	require.Equal(t, []string{ref}, bdis(t, ctx, "h1"))
	require.Equal(t, []string{name}, bdis(t, ctx, "#partner"))
	var amount string
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("#amount", &amount, chromedp.ByID)))
	require.True(t, strings.HasPrefix(amount, usdt+" USDT → 250,000.50 NGN at "), amount)

	// The list: the same, row by row.
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/transactions?stage=awaiting_fill"), chromedp.WaitVisible("#results", chromedp.ByID)))
	require.Equal(t, []string{ref, name}, bdis(t, ctx, `#results tr[data-id="`+tx.Id.String()+`"]`))

	// The fill's confirmation page: the subject reads reference · partner ·
	// amount, drawn in that order, the amount beside its currency.
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(page),
		chromedp.SetValue("#fill-rate", "1549.10", chromedp.ByID), chromedp.SetValue("#fill-amount", "250000.50", chromedp.ByID),
		chromedp.SetValue("#fill-ref", lpRef, chromedp.ByID), webtest.Follow("#fill"),
		chromedp.WaitVisible("#confirm", chromedp.ByID)))
	var subject string
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("#subject", &subject, chromedp.ByID)))
	require.True(t, strings.HasPrefix(subject, ref+" · "+name+" · "+usdt+" USDT → 250,000.50 NGN at "), subject)
	for _, want := range []string{ref, name} {
		require.Contains(t, bdis(t, ctx, "#subject"), want, "in its own isolate")
	}
	order := []string{ref, name, usdt, "USDT", "250,000.50", "NGN"}
	drawn := boxes(t, ctx, "#subject", order...)
	requireInOrder(t, "the confirmation's subject", order, drawn)
	require.Less(t, drawn[3].Left-drawn[2].Right, 12.0, "the amount stands beside its currency")
	require.Contains(t, bdis(t, ctx, "main table"), lpRef, "the typed reference in its own isolate")

	// The check sees a spill: the same words without isolates, on this page,
	// draw the amount before the partner's name.
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`(() => {
	  const p = document.createElement('p'); p.id = 'unisolated';
	  p.textContent = document.querySelector('#subject').textContent;
	  document.querySelector('main').appendChild(p); return true; })()`, nil)))
	bare := boxes(t, ctx, "#unisolated", name, usdt)
	require.Less(t, bare[1].Left, bare[0].Left, "without isolates the partner's name takes the amount (%+v)", bare)

	// Confirmed: the typed reference is isolated in the fill's line and the history.
	require.NoError(t, chromedp.Run(ctx, webtest.Follow("#confirm"), chromedp.WaitVisible("#notice", chromedp.ByID)))
	require.Contains(t, bdis(t, ctx, "dl.facts"), lpRef)
	require.Contains(t, bdis(t, ctx, "#history"), lpRef)

	// A screening list's source is shown with its controls made visible.
	env.ListAddress(t, "SDN \u202eTSIL\x1b[31m 2026", "0x"+strings.Repeat("ab", 20))
	var lists string
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/screening"),
		chromedp.WaitVisible("#screening-lists", chromedp.ByID),
		chromedp.Evaluate(`document.querySelector('#screening-lists').textContent`, &lists)))
	require.NotContains(t, lists, "\u202e", "no override reverses the name")
	require.NotContains(t, lists, "\x1b", "no escape sequence")
	require.Contains(t, bdis(t, ctx, "#screening-lists .source"), `SDN \u202eTSIL\x1b[31m 2026`, "made visible, in its own isolate")
}
