/**
 * HTML through Hono's `html` tag: every interpolated string is escaped; nested `h` results are not. The
 * console never interpolates promises, so results are plain escaped strings.
 */
import { html } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

export type Html = HtmlEscapedString;

export const h = (strings: TemplateStringsArray, ...values: unknown[]): Html =>
  html(strings, ...values) as Html;

/** A whole console page: header (links, logout), then `body`. */
export function page(title: string, body: Html, opts: { loggedIn: boolean; live?: boolean }): string {
  const logout = opts.loggedIn
    ? h`<form method="post" action="/console/logout"><button type="submit">Log out</button></form>`
    : '';
  const live = opts.live ? h`<span id="live" class="live off">connecting</span>` : '';
  return h`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${title} · forkbox</title><link rel="stylesheet" href="/console/assets/console.css"></head>
<body><header><strong>forkbox</strong><a href="/console">Sandboxes</a><a href="/console/audit">Audit</a>${live}${logout}</header>
<main>${body}</main><script src="/console/assets/console.js"></script></body></html>`.toString();
}

/** Link to a sandbox's console page. */
export const sandboxLink = (id: string, label: string = id): Html =>
  h`<a href="/console/sandboxes/${encodeURIComponent(id)}">${label}</a>`;
