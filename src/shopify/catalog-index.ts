import type { ShopifyAdminClient } from "./admin-client.ts";

/** What the shop's own catalog holds, by the keys a legacy product must not reuse. */
export interface ShopifyCatalogIndex {
  /** Lowercased handle → the product's GID. */
  handles: Map<string, string>;
  /** Lowercased SKU → the product's GID and handle. */
  skus: Map<string, { productId: string; handle: string }>;
  products: number;
}

/**
 * Products and the first variants' SKUs, sized under Shopify's 1,000-point single-query cost:
 * 2 + 25 × (1 + 2 + 30 + 1) = 852 requested points per page.
 */
const PRODUCTS_PAGE_SIZE = 25;
const VARIANTS_PER_PRODUCT = 30;
const PRODUCTS_QUERY = `#graphql
  query ConnectorCatalogKeys($first: Int!, $variants: Int!, $after: String) {
    products(first: $first, after: $after) {
      nodes {
        id
        handle
        variants(first: $variants) { nodes { sku } pageInfo { hasNextPage endCursor } }
      }
      pageInfo { hasNextPage endCursor }
    }
  }`;
/** The rest of a product's variants, when it has more than the page above holds. */
const VARIANTS_QUERY = `#graphql
  query ConnectorProductSkus($id: ID!, $after: String) {
    product(id: $id) {
      variants(first: 250, after: $after) { nodes { sku } pageInfo { hasNextPage endCursor } }
    }
  }`;

interface PageInfo {
  hasNextPage: boolean;
  endCursor: string | null;
}
interface VariantPage {
  nodes: { sku: string | null }[];
  pageInfo: PageInfo;
}
interface ProductsData {
  products: {
    nodes: { id: string; handle: string; variants: VariantPage }[];
    pageInfo: PageInfo;
  };
}

/**
 * Reads every product's handle and every variant's SKU from the Admin API, paged (the client
 * waits on Shopify's cost bucket). Keys are lowercased: Shopify's handles are lowercase, and a
 * SKU differing only in case is taken for the same article.
 */
export async function readCatalogIndex(
  client: ShopifyAdminClient,
  options: { onPage?: (products: number) => void } = {},
): Promise<ShopifyCatalogIndex> {
  const index: ShopifyCatalogIndex = { handles: new Map(), skus: new Map(), products: 0 };
  let after: string | null = null;
  for (;;) {
    const { data }: { data: ProductsData } = await client.request<ProductsData>(PRODUCTS_QUERY, {
      first: PRODUCTS_PAGE_SIZE,
      variants: VARIANTS_PER_PRODUCT,
      after,
    });
    for (const product of data.products.nodes) {
      index.products++;
      index.handles.set(product.handle.toLowerCase(), product.id);
      let variants: VariantPage | null = product.variants;
      while (variants) {
        for (const v of variants.nodes) {
          const sku = v.sku?.trim();
          if (sku)
            index.skus.set(sku.toLowerCase(), { productId: product.id, handle: product.handle });
        }
        if (!variants.pageInfo.hasNextPage) break;
        const more: { data: { product: { variants: VariantPage } | null } } = await client.request(
          VARIANTS_QUERY,
          { id: product.id, after: variants.pageInfo.endCursor },
        );
        variants = more.data.product?.variants ?? null;
      }
    }
    options.onPage?.(index.products);
    if (!data.products.pageInfo.hasNextPage || !data.products.pageInfo.endCursor) return index;
    after = data.products.pageInfo.endCursor;
  }
}
