"""Creating, editing and deleting a link from forms: the form becomes the body `POST`/`PUT /links` take, and the
service's messages appear next to the fields they name."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from slugline.common.errors import ServiceError
from slugline.common.visibility import Visibility
from slugline.dashboard.links import link_or_404
from slugline.dashboard.pages import field_errors, read_form, redirect, render
from slugline.dashboard.rules import EXAMPLE, VARIANTS_EXAMPLE, rules_of, text_of, variants_of, variants_text
from slugline.dashboard.session import check_csrf, visitor
from slugline.links import service as links

router = APIRouter(include_in_schema=False)
TEXT_FIELDS = ("title", "description", "note")
LIFE_FIELDS = ("expires_at", "max_clicks", "expired_url", "archived", "preview", "rules", "variants")
FIELDS = ("destination_url", "slug", *TEXT_FIELDS, "hashtags", "visibility", "password", "auto_meta", *LIFE_FIELDS)
PREVIEW_FIELDS = ("title", "description", "image_url")  # the form's preview_title, preview_description, ...
VISIBILITIES = [v.value for v in Visibility]
MAX_NOTICE = 200  # characters of a failed fetch's reason carried to the link page


def hashtags_of(text: str) -> list[str]:
    """The "Hashtags" field: comma-separated (the service strips '#', lowercases and de-duplicates)."""
    return [tag.strip() for tag in text.split(",") if tag.strip()]


def create_body(form: dict[str, str]) -> dict[str, Any]:
    """Fields left blank are not sent, so the service's defaults apply (a generated slug, public)."""
    body: dict[str, Any] = {"destination_url": form.get("destination_url", "")}
    for name in ("slug", *TEXT_FIELDS, "visibility", "password"):
        if form.get(name):
            body[name] = form[name]
    if tags := hashtags_of(form.get("hashtags", "")):
        body["hashtags"] = tags
    body["auto_meta"] = "auto_meta" in form
    body.update({name: value for name, value in lifecycle_body(form).items() if value is not None})
    return body


def lifecycle_body(form: dict[str, str]) -> dict[str, Any]:
    """The lifecycle fields (a blank one is null): the expiry is a `datetime-local` value, taken as UTC; a max clicks
    that is not a number is sent as it was typed, for the service to name the rule."""
    clicks = form.get("max_clicks", "").strip()
    preview = {name: form[f"preview_{name}"] for name in PREVIEW_FIELDS if form.get(f"preview_{name}", "").strip()}
    return {
        "expires_at": form.get("expires_at") or None,
        "max_clicks": (int(clicks) if clicks.isdigit() else clicks) if clicks else None,
        "expired_url": form.get("expired_url") or None,
        "archived": "archived" in form,
        "preview": preview or None,
        "rules": rules_of(form.get("rules", "")),
        "variants": variants_of(form.get("variants", "")),
    }


def update_body(form: dict[str, str]) -> dict[str, Any]:
    """Every field is sent: a blank text field or hashtags clears it; a blank slug or password keeps the old one."""
    body: dict[str, Any] = {"destination_url": form.get("destination_url", ""), "visibility": form.get("visibility")}
    for name in ("slug", "password"):
        if form.get(name):
            body[name] = form[name]
    for name in TEXT_FIELDS:
        body[name] = form.get(name) or None
    body["hashtags"] = hashtags_of(form.get("hashtags", "")) or None
    return {**body, **lifecycle_body(form)}


def _form_values(link: dict[str, Any]) -> dict[str, str]:
    values = {name: link.get(name) or "" for name in ("destination_url", "slug", *TEXT_FIELDS, "visibility")}
    values["hashtags"] = ", ".join(link.get("hashtags") or ())
    values["expires_at"] = (link.get("expires_at") or "")[:16]  # YYYY-MM-DDTHH:MM, as `datetime-local` shows it
    values["max_clicks"] = str(link.get("max_clicks") or "")
    values["expired_url"] = link.get("expired_url") or ""
    values["archived"] = "1" if link.get("archived") else ""
    for name in PREVIEW_FIELDS:
        values[f"preview_{name}"] = (link.get("preview") or {}).get(name) or ""
    values["rules"] = text_of(link.get("rules"))
    values["variants"] = variants_text(link.get("variants"))
    return values


def _form_page(request: Request, who: Any, status: int = 200, **context: Any) -> Response:
    return render(
        request,
        who,
        "link_form.html",
        status,
        visibilities=VISIBILITIES,
        rules_example=EXAMPLE,
        variants_example=VARIANTS_EXAMPLE,
        **context,
    )


@router.get("/app/links/new")
async def new_form(request: Request) -> Response:
    who = await visitor(request)
    who.owner()
    return _form_page(request, who, link=None, values={"visibility": "public"})


@router.post("/app/links/new")
async def create(request: Request) -> Response:
    who = await visitor(request)
    caller = who.owner()
    form = await read_form(request)
    check_csrf(who, form)
    try:
        made = await links.create_link(who.rt, caller, create_body(form))
    except ServiceError as exc:
        errors = field_errors(exc.message, FIELDS)
        return _form_page(request, who, exc.status, link=None, values=form, errors=errors)
    if failed := made.get("meta_error"):  # the link page says what the title fetch ran into
        return redirect(f"/app/links/{made['id']}?" + urlencode({"meta_error": failed[:MAX_NOTICE]}))
    return redirect(f"/app/links/{made['id']}")


@router.get("/app/links/{link_id}/edit")
async def edit_form(request: Request, link_id: str) -> Response:
    who = await visitor(request)
    link = await link_or_404(who, link_id)
    return _form_page(request, who, link=link, values=_form_values(link))


@router.post("/app/links/{link_id}/edit")
async def update(request: Request, link_id: str) -> Response:
    who = await visitor(request)
    link = await link_or_404(who, link_id)
    form = await read_form(request)
    check_csrf(who, form)
    try:
        await links.update_link(who.rt, who.owner(), link_id, update_body(form))
    except ServiceError as exc:
        errors = field_errors(exc.message, FIELDS)
        return _form_page(request, who, exc.status, link=link, values=form, errors=errors)
    return redirect(f"/app/links/{link_id}")


@router.get("/app/links/{link_id}/delete")
async def delete_form(request: Request, link_id: str) -> Response:
    who = await visitor(request)
    link = await link_or_404(who, link_id)
    return render(request, who, "delete.html", link=link)


@router.post("/app/links/{link_id}/delete")
async def delete(request: Request, link_id: str) -> Response:
    who = await visitor(request)
    await link_or_404(who, link_id)
    check_csrf(who, await read_form(request))
    await links.delete_link(who.rt, who.owner(), link_id)
    return redirect("/app/links")
