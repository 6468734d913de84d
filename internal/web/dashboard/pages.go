package dashboard

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"reflect"
	"strings"

	pc "partnerd/gen/client"
	"partnerd/internal/web/webkit"
)

func (d *Dashboard) parse() error {
	funcs := webkit.Funcs()
	funcs["str"] = func(s any) string { return fmt.Sprint(s) }
	layout, err := fs.ReadFile(web, "web/layout.html")
	if err != nil {
		return err
	}
	names, err := fs.Glob(web, "web/page_*.html")
	if err != nil {
		return err
	}
	d.pages = map[string]*template.Template{}
	for _, n := range names {
		body, err := fs.ReadFile(web, n)
		if err != nil {
			return err
		}
		t, err := template.New("layout").Funcs(funcs).Parse(string(layout))
		if err != nil {
			return err
		}
		if _, err := t.Parse(string(body)); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		d.pages[strings.TrimSuffix(strings.TrimPrefix(n, "web/page_"), ".html")] = t
	}
	return nil
}

// render writes page (web/page_<page>.html in the layout) with data, the
// session's user, navigation and CSRF token. data["Section"] marks the current
// navigation entry.
func (d *Dashboard) render(w http.ResponseWriter, status int, page string, ss *session, data map[string]any) {
	if data == nil {
		data = map[string]any{}
	}
	if ss != nil {
		data["User"] = ss.Data.Email
		data["Partner"] = ss.Data.PartnerName
		data["Role"] = string(ss.Data.Role)
		data["CSRF"] = ss.CSRF
		section, _ := data["Section"].(string)
		data["Nav"] = navigation(ss.Data.Role, section)
	}
	data["Base"] = BasePath
	data["Sandbox"] = !d.d.Production
	t := d.pages[page]
	if t == nil {
		d.d.Logger.Error("dashboard render: no such page", "page", page)
		http.Error(w, "Internal error.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := t.ExecuteTemplate(w, "layout", data); err != nil {
		d.d.Logger.Error("dashboard render", "page", page, "error", err.Error())
	}
}

// notFound is the 404 page: what does not exist and what belongs to another
// partner look the same.
func (d *Dashboard) notFound(w http.ResponseWriter, ss *session) {
	d.render(w, http.StatusNotFound, "notfound", ss, map[string]any{"Title": "Not found"})
}

// forbidden is the 403 page: the user's role does not open this page; nothing
// was changed.
func (d *Dashboard) forbidden(w http.ResponseWriter, ss *session) {
	d.render(w, http.StatusForbidden, "forbidden", ss, map[string]any{"Title": "Not for your role"})
}

// message shows a titled message with status.
func (d *Dashboard) message(w http.ResponseWriter, status int, ss *session, title, msg string) {
	d.render(w, status, "message", ss, map[string]any{"Title": title, "Message": msg})
}

// apiError turns a partner API failure into words.
func apiError(status int, body []byte) string {
	var e pc.Error
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		msg := e.Message
		for _, dt := range e.Error.Details {
			msg += " (" + dt.Field + ": " + dt.Message + ")"
		}
		return msg
	}
	return fmt.Sprintf("The partner API answered HTTP %d.", status)
}

// failed shows a partner API failure: its 404 is the 404 page (another
// partner's id included), other answers a message with the API's status.
func (d *Dashboard) failed(w http.ResponseWriter, ss *session, status int, body []byte) {
	if status == http.StatusNotFound {
		d.notFound(w, ss)
		return
	}
	if status < 400 {
		status = http.StatusBadGateway
	}
	d.message(w, status, ss, "Not done", apiError(status, body))
}

// answer is what every generated response has.
type answer interface {
	StatusCode() int
	GetBody() []byte
}

// bodyOf is the body of a generated response, or nil (no response: the call
// itself failed).
func bodyOf(res answer) []byte {
	if res == nil || reflect.ValueOf(res).IsNil() {
		return nil
	}
	return res.GetBody()
}

// statusOf is the status of res, or 502 when the call itself failed.
func statusOf(res answer, err error) int {
	if err != nil || res == nil {
		return http.StatusBadGateway
	}
	return res.StatusCode()
}
