package dashboard

// frame is what the header shows of a session: the user, their partner and
// role, the navigation of their role (data["Section"] marks the current entry)
// and the sign-out form's CSRF token; and, on every page, whether this is the
// sandbox.
func (d *Dashboard) frame(ss *session, data map[string]any) {
	if ss != nil {
		data["User"] = ss.Data.Email
		data["Partner"] = ss.Data.PartnerName
		data["Role"] = string(ss.Data.Role)
		data["CSRF"] = ss.CSRF
		section, _ := data["Section"].(string)
		data["Nav"] = navigation(ss.Data.Role, section)
	}
	data["Sandbox"] = !d.d.Production
}
