/**
 * The RFC 8288 `Link` field to a list's next page, e.g. `</v1/pets?limit=20&status=sold&after=MS5zb2xk…>; rel="next"`:
 * `query`'s parameters in their order, those undefined left out (docs/pagination.md, docs/events.md "Polling",
 * docs/admin.md "Paging").
 */
export function nextPageLink(path: string, query: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.append(name, String(value));
  return `<${path}?${params.toString()}>; rel="next"`;
}
