"""Keeping the way back: Copy link on the customer page and in the widget, and the home page's ways in."""

from __future__ import annotations

import re
from urllib.parse import unquote

from playwright.sync_api import expect


def test_copy_link_puts_the_conversations_private_link_on_the_clipboard(browser, widget_server, start_conversation,
                                                                       screenshots, accessibility):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=widget_server.url)
    page = context.new_page()
    link = start_conversation(page, widget_server, "Where is my order?")
    expect(page.get_by_role("log")).to_contain_text("on its way", timeout=10_000)
    expect(page.locator("#keep-link")).to_contain_text("Keep it private")

    page.get_by_role("button", name="Copy link").click()

    expect(page.get_by_role("button", name="Link copied")).to_be_visible()
    assert unquote(page.evaluate("navigator.clipboard.readText()")) == unquote(link)
    screenshots(page, "customer-page-link-copied")
    accessibility(page)
    context.close()


def test_the_widget_says_where_its_link_is(browser, demo_shop, screenshots, accessibility):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(demo_shop + "/")
    expect(page.locator("html")).to_have_attribute("data-waypoint-ready", "1", timeout=15_000)
    page.get_by_role("button", name="Open chat").click()
    chat = page.frame_locator("iframe[title=Chat]")
    chat.get_by_label("Message").fill("Where is my order?")
    chat.get_by_label("Message").press("Enter")

    expect(chat.locator("#keep-link")).to_contain_text("copy this chat's private link", timeout=10_000)
    expect(chat.get_by_role("button", name="Copy link")).to_be_visible()
    screenshots(page, "widget-keep-link")
    accessibility(page)
    context.close()


def test_the_home_page_links_the_ways_in(browser, widget_server, demo_shop, screenshots, accessibility):
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.goto(widget_server.url + "/")

    ways = page.get_by_role("navigation", name="More to try")
    expect(ways.get_by_role("link", name="The demo shop")).to_have_attribute("href", demo_shop + "/")
    expect(ways.get_by_role("link", name="The SDK demo")).to_have_attribute("href", "/static/waypoint/sdk-demo.html")
    expect(ways.get_by_role("link", name="The staff panel")).to_have_attribute("href", "/staff/")
    screenshots(page, "home-ways-in")
    accessibility(page)
    page.context.close()


def test_times_follow_the_pages_language_not_the_browsers(browser, widget_server, start_conversation):
    context = browser.new_context(locale="de-DE", timezone_id="Europe/Berlin")
    page = context.new_page()
    start_conversation(page, widget_server, "Where is my order?")
    expect(page.get_by_role("log")).to_contain_text("on its way", timeout=10_000)

    stamp = page.locator("#transcript time.when").last

    expect(stamp).to_have_attribute("title", re.compile(r"^(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), "))
    context.close()


def test_opening_details_on_an_approval_keeps_approve_and_deny_in_view(browser, widget_server, start_conversation, screenshots):
    context = browser.new_context(viewport={"width": 375, "height": 560}, is_mobile=True, has_touch=True)
    page = context.new_page()
    start_conversation(page, widget_server, "I want a refund")
    card = page.locator("#cards .card.approval")
    expect(card.get_by_role("button", name="Approve")).to_be_visible(timeout=10_000)

    card.locator("summary", has_text="Details").click()

    expect(card.locator("pre.arguments")).to_be_visible()
    expect(card.get_by_role("button", name="Approve")).to_be_in_viewport(ratio=1)
    expect(card.get_by_role("button", name="Deny")).to_be_in_viewport(ratio=1)
    screenshots(page, "approval-details-open")
    context.close()
