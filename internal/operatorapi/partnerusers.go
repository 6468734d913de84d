package operatorapi

import (
	"context"
	"strings"

	"partnerd/gen/operatorapi"
	"partnerd/internal/httpkit"
	"partnerd/internal/partnerusers"
)

// ListPartnerUsers lists a partner's team (GET /partners/{id}/users).
func (s *Server) ListPartnerUsers(ctx context.Context, req operatorapi.ListPartnerUsersRequestObject) (operatorapi.ListPartnerUsersResponseObject, error) {
	us, err := s.partnerUsers.List(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	out := make([]operatorapi.PartnerUser, len(us))
	for i, u := range us {
		out[i] = partnerUserOut(u)
	}
	return operatorapi.ListPartnerUsers200JSONResponse{Success: true, Data: out}, nil
}

// InvitePartnerUser invites a person to a partner's team (POST /partners/{id}/users).
func (s *Server) InvitePartnerUser(ctx context.Context, req operatorapi.InvitePartnerUserRequestObject) (operatorapi.InvitePartnerUserResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(n *partnerusers.NewInvitation) operatorapi.InvitePartnerUserResponseObject {
		msg := "User invited; the invitation link is shown once and works once, until its expires_at."
		return operatorapi.InvitePartnerUser201JSONResponse{Body: operatorapi.PartnerUserInvitedResponse{Success: true, Message: &msg,
			Data: operatorapi.PartnerUserInvited{User: partnerUserOut(n.User),
				Invitation: operatorapi.PartnerInvitation{InviteUrl: n.Path(), InviteLink: s.link(n.Path()), ExpiresAt: n.Invitation.ExpiresAt}}}}
	}
	key := httpkit.KeyedBy[partnerusers.Tx](ctx, s.idem, answer, operatorapi.InvitePartnerUserResponseObject.VisitInvitePartnerUserResponse)
	n, err := s.partnerUsers.Invite(ctx, key, req.Id, req.Body.Email, partnerusers.Role(req.Body.Role), actorOf(ctx, o))
	if err != nil {
		return nil, err
	}
	return answer(n), nil
}

func partnerUserOut(u *partnerusers.User) operatorapi.PartnerUser {
	return operatorapi.PartnerUser{Id: u.ID, PartnerId: u.PartnerID, Email: u.Email, Role: operatorapi.PartnerUserRole(u.Role),
		Status: operatorapi.PartnerUserStatus(u.Status), TotpEnabled: u.TOTPEnabled(), CreatedAt: u.CreatedAt,
		UpdatedAt: u.UpdatedAt, DisabledAt: u.DisabledAt}
}

// link is path on the address people reach the service at (Deps.LinkBase), or
// path alone when the server was built without one.
func (s *Server) link(path string) string {
	if s.linkBase == nil {
		return path
	}
	return strings.TrimSuffix(s.linkBase(), "/") + path
}
