package webkit

import (
	"fmt"
	"html/template"
	"time"

	"github.com/google/uuid"
)

// timeLayout is how both sites show an instant: UTC, to the second.
const timeLayout = "2006-01-02 15:04:05 UTC"

// Funcs returns the template functions both sites' pages use, so a value reads
// the same on the console and on the dashboard: utc (a time or a pointer to one,
// "—" for none), deref (an optional value, empty or "—" for none), short (a long
// id or hash shortened to its ends), words (an identifier with its
// underscores as spaces), state, reason and change (a state, a history reason,
// a history row's move in words: State, Reason, Change), amount (a decimal
// amount grouped in thousands, exact: Amount), problem (a refusal with its
// detail folded), isolate (text a person typed, in its own direction isolate:
// Isolate), isolateText (the same where no element can go: IsolateText),
// visible (text from outside with its controls made visible: Visible) and
// foreign (both: Foreign). A site adds its own to the map it gets.
func Funcs() template.FuncMap {
	return template.FuncMap{
		"utc": func(t any) string {
			switch v := t.(type) {
			case time.Time:
				return v.UTC().Format(timeLayout)
			case *time.Time:
				if v == nil {
					return "—"
				}
				return v.UTC().Format(timeLayout)
			}
			return fmt.Sprint(t)
		},
		"deref": func(p any) any {
			switch v := p.(type) {
			case *string:
				if v == nil {
					return ""
				}
				return *v
			case *uuid.UUID:
				if v == nil {
					return ""
				}
				return v.String()
			case *time.Time:
				if v == nil {
					return ""
				}
				return v.UTC().Format(timeLayout)
			case *bool:
				return v != nil && *v
			case *int:
				if v == nil {
					return "—"
				}
				return fmt.Sprint(*v)
			case *int64:
				if v == nil {
					return "—"
				}
				return fmt.Sprint(*v)
			}
			return p
		},
		"short":   Short,
		"words":   Words,
		"state":   StateWords,
		"reason":  Reason,
		"change":  Change,
		"amount":  Amount,
		"problem": problemHTML,
		// Every text a person typed goes through isolate (isolateText in an
		// attribute, an option or the title); every text from outside the service
		// through foreign (isolate of visible).
		"isolate":     Isolate,
		"isolateText": IsolateText,
		"visible":     Visible,
		"foreign":     Foreign,
	}
}

// Short is a long id or hash shortened to its ends (the whole of it goes on
// the element's title).
func Short(s string) string {
	if len(s) > 14 {
		return s[:8] + "…" + s[len(s)-4:]
	}
	return s
}

// problemHTML is a refusal in a page: a Problem's words with its detail folded
// in a <details> beneath them (open it to read the code, the status, a raw
// error), or a plain message as it is; escaped either way, with any control or
// format character made visible (an API's words may quote what was sent, a raw
// error what a receiver answered). A Sentence (safe HTML, its values isolated)
// is shown as it is.
func problemHTML(p any) template.HTML {
	switch v := p.(type) {
	case template.HTML:
		return v
	case Problem:
		out := template.HTMLEscapeString(Visible(v.Words))
		if v.Detail != "" {
			out += `<details class="detail"><summary>Details</summary><code>` + template.HTMLEscapeString(Visible(v.Detail)) + `</code></details>`
		}
		return template.HTML(out)
	case *Problem:
		if v == nil {
			return ""
		}
		return problemHTML(*v)
	}
	return template.HTML(template.HTMLEscapeString(Visible(p)))
}
