import type { Context } from "hono";
import { errorResponse } from "../../lib/http-errors.ts";
import type { AdminContext } from "./admin-deps.ts";

/**
 * The 404 for a shop the connector has no record of, in a path (`/shops/:shop/resync`) or a
 * filter (`?shop=`, a bulk retry's `shop`): named by its field, with where the shops are listed.
 * A filter on a mistyped shop would otherwise answer an empty list, zero counts or a bulk retry
 * that matched nothing, which reads as "nothing wrong with this shop".
 */
export function shopNotRegistered(c: Context, shop: string) {
  return errorResponse(c, 404, "not_found", `shop ${shop} is not registered`, [
    {
      path: "shop",
      message: "not registered: `connector shops list` shows the shops the connector has",
    },
  ]);
}

/** The 404 of `shopNotRegistered` when `shop` is given and unknown; null otherwise. */
export async function unknownShopFilter(
  c: Context,
  ctx: Pick<AdminContext, "shops">,
  shop: string | undefined,
): Promise<Response | null> {
  if (shop === undefined || (await ctx.shops.getShop(shop))) return null;
  return shopNotRegistered(c, shop);
}
