// A script a user would write with the TypeScript client `@hey-api/openapi-ts` generates from Slugline's document.
//
// tests/e2e/test_generated_clients.py type-checks it with `tsc --strict` and runs it against a live server: a schema
// change that breaks the generated client fails either step.
//
// Usage: node slugline-example.js BASE_URL USERNAME

import { createClient } from './client/client';
import {
  createKey,
  createLink,
  deleteLink,
  getAnalytics,
  getLink,
  getQrCode,
  listLinks,
  register,
  updateLink,
} from './client/sdk.gen';
import type { KeyRequest, LinkCreate, LinkUpdate } from './client/types.gen';

declare const process: { argv: string[]; exitCode?: number };

function check(condition: unknown, what: string, detail?: unknown): asserts condition {
  if (!condition) {
    throw new Error(`${what}: ${JSON.stringify(detail)}`);
  }
}

async function main(baseUrl: string, username: string): Promise<void> {
  const anonymous = createClient({ baseUrl });
  const session = await register({ client: anonymous, body: { username, password: 'correct horse battery' } });
  check(session.data, 'register', session.error);
  const token: string = session.data.token;

  const manager = createClient({ baseUrl, auth: token });
  const key = await createKey({ client: manager, body: { scope: 'full' } });
  check(key.data, 'createKey', key.error);
  const api = createClient({ baseUrl, auth: key.data.key });

  const plain: LinkCreate = { destination_url: 'https://example.org/generated', title: 'Generated', hashtags: ['client'] };
  const made = await createLink({ client: api, body: plain });
  check(made.data && made.response.status === 201, 'createLink', made.error);
  const link = made.data;
  check(link.destination_url === plain.destination_url && link.visibility === 'public', 'created link', link);

  const locked = await createLink({
    client: api,
    body: { destination_url: 'https://example.org/locked', visibility: 'password', password: 'open sesame' },
  });
  check(locked.data?.visibility === 'password', 'password link', locked.error);

  const refused = await createLink({
    client: api,
    body: { destination_url: 'https://example.org/x', password: 'open sesame' },
  });
  check(refused.response.status === 422 && refused.error?.error.includes('password'), 'password rule', refused.error);

  const page = await listLinks({ client: api, query: { q: 'generated', per: 10 } });
  check(page.data, 'listLinks', page.error);
  check(page.data.pagination.total === 1 && page.data.data[0].id === link.id, 'listed', page.data);

  const got = await getLink({ client: api, path: { link_id: link.id } });
  check(got.data?.slug === link.slug, 'getLink', got.error);
  const created: string = got.data.created_at;
  check(!Number.isNaN(Date.parse(created)), 'created_at', created);

  const change: LinkUpdate = { title: 'Renamed', visibility: 'unlisted' };
  const changed = await updateLink({ client: api, path: { link_id: link.id }, body: change });
  check(changed.data?.title === 'Renamed' && changed.data.visibility === 'unlisted', 'updateLink', changed.error);

  const figures = await getAnalytics({ client: api, query: { days: 7, interval: 'day' } });
  check(figures.data?.days === 7 && figures.data.total_clicks === 0, 'getAnalytics', figures.error);

  const qr = await getQrCode({ client: api, path: { link_id: link.id }, query: { format: 'svg' }, parseAs: 'text' });
  check(qr.response.status === 200 && String(qr.data).includes('<svg'), 'getQrCode', qr.error);

  const gone = await deleteLink({ client: api, path: { link_id: link.id } });
  check(gone.data?.deleted === true && gone.data.id === link.id, 'deleteLink', gone.error);
  const missing = await getLink({ client: api, path: { link_id: link.id } });
  check(missing.response.status === 404 && typeof missing.error?.error === 'string', 'deleted link', missing.error);

  // The types are closed: a wrong type or an unknown field does not compile (or these directives would be unused).
  // @ts-expect-error title is a string
  const wrongType: LinkCreate = { destination_url: 'https://example.org/', title: 42 };
  // @ts-expect-error the API has no such field
  const unknownField: LinkCreate = { destination_url: 'https://example.org/', bogus: true };
  // @ts-expect-error scope is 'full' or 'public'
  const badScope: KeyRequest = { scope: 'admin' };
  void [wrongType, unknownField, badScope];
  console.log('ok');
}

main(process.argv[2], process.argv[3]).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
