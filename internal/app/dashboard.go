package app

import (
	"github.com/labstack/echo/v4"

	"partnerd/internal/audit"
	"partnerd/internal/config"
	"partnerd/internal/httpapi"
	"partnerd/internal/store"
	"partnerd/internal/web/dashboard"
)

// openDashboard mounts the partners' dashboard: it calls the partner API in
// process, through the finished handler, as the signed-in user's partner.
func (a *App) openDashboard(e *echo.Echo, networks []string) error {
	return dashboard.Register(e, dashboard.Deps{
		Users: a.partnerUsers, Partners: a.partners, Audit: a.audit, Keys: a.actions, API: a.inProcessHandler,
		PartnerBase: httpapi.BasePath, Networks: networks, Production: a.cfg.Env == config.Production, Secrets: a.cfg.Secrets, State: a.store,
		Logger: a.log, Now: store.Now, LinkBase: a.LinkBase, Settlement: a.settlement,
	})
}

// Audit returns the audit log (tests build a dashboard of their own over it).
func (a *App) Audit() *audit.Log { return a.audit }
