import { notFound } from "./http-error.ts";
import {
  type ProductCreate,
  type ProductReplace,
  type ProductVariantWrite,
  variantKey,
} from "./interface.ts";

interface StoredVariant extends ProductVariantWrite {
  variantId: number;
  key: string;
  removed: boolean;
  displayPosition: number;
}

export interface StoredProduct {
  productId: number;
  storeId: number;
  handle: string;
  /** Products synced from the platform are invisible to this interface (rule 7). */
  createdViaApi: boolean;
  fields: Omit<ProductCreate, "variants" | "handle" | "storeId">;
  variants: StoredVariant[];
  createdOn: string;
  updatedOn: string;
  deletedOn: string | null;
}

/** The product state machine (the provider's API reference, 3.1) and the rules of 4.1. */
export class ProductBook {
  readonly #products = new Map<number, StoredProduct>();
  #nextProductId = 50_001;
  #nextVariantId = 80_001;

  get all(): StoredProduct[] {
    return [...this.#products.values()];
  }

  seedPlatformProduct(storeId: number, handle: string): StoredProduct {
    const now = new Date().toISOString();
    const product: StoredProduct = {
      productId: this.#nextProductId++,
      storeId,
      handle,
      createdViaApi: false,
      fields: { title: "Platform-synced product" },
      variants: [],
      createdOn: now,
      updatedOn: now,
      deletedOn: null,
    };
    this.#products.set(product.productId, product);
    return product;
  }

  /** POST /products: 201 for a new handle, 200 (same productId) for a known one, live or deleted. */
  upsert(storeId: number, body: ProductCreate): { product: StoredProduct; created: boolean } {
    const existing = this.all.find(
      (p) => p.createdViaApi && p.storeId === storeId && p.handle === body.handle,
    );
    if (existing) {
      this.#replace(existing, body);
      existing.deletedOn = null;
      return { product: existing, created: false };
    }
    const now = new Date().toISOString();
    const product: StoredProduct = {
      productId: this.#nextProductId++,
      storeId,
      handle: body.handle,
      createdViaApi: true,
      fields: {},
      variants: [],
      createdOn: now,
      updatedOn: now,
      deletedOn: null,
    };
    this.#replace(product, body);
    this.#products.set(product.productId, product);
    return { product, created: true };
  }

  /** GET/PUT/DELETE resolve only products created here; others are indistinguishable from none. */
  get(productId: number, storeIds: number[]): StoredProduct {
    const product = this.#products.get(productId);
    if (!product?.createdViaApi || !storeIds.includes(product.storeId)) throw notFound("product");
    return product;
  }

  replace(productId: number, storeIds: number[], body: ProductReplace): StoredProduct {
    const product = this.get(productId, storeIds);
    this.#replace(product, body);
    product.deletedOn = null;
    return product;
  }

  delete(productId: number, storeIds: number[]): void {
    const product = this.get(productId, storeIds);
    if (product.deletedOn) return;
    product.deletedOn = new Date().toISOString();
    for (const v of product.variants) v.removed = true;
  }

  /** Full representation: omitted fields cleared, omitted variants removed, returning ones revived. */
  #replace(product: StoredProduct, body: ProductCreate | ProductReplace): void {
    const { variants, handle: _h, storeId: _s, ...fields } = body;
    product.fields = fields;
    for (const v of product.variants) v.removed = true;
    variants.forEach((variant, i) => {
      const key = variantKey(variant.options);
      const known = product.variants.find((v) => v.key === key);
      const next = {
        ...variant,
        price: variant.price,
        key,
        removed: false,
        displayPosition: i + 1,
        variantId: known?.variantId ?? this.#nextVariantId++,
      };
      if (known) Object.assign(known, next);
      else product.variants.push(next);
    });
    for (const v of product.variants) {
      if (v.removed) {
        // A removed variant keeps only its identity, so a return restores the same variantId.
        for (const field of [
          "sku",
          "barcode",
          "grams",
          "price",
          "compareAtPrice",
          "unitCost",
          "imageUrl",
        ] as const) {
          delete v[field];
        }
      }
    }
    product.updatedOn = new Date().toISOString();
  }
}

/** The Product response shape of the provider's API reference, 2.9. */
export function productView(product: StoredProduct) {
  const live = product.deletedOn
    ? []
    : product.variants
        .filter((v) => !v.removed)
        .sort((a, b) => a.displayPosition - b.displayPosition);
  const title = product.fields.title;
  const optionNames = live[0]?.options.map((o) => o.name) ?? [];
  const options = optionNames.map((name, i) => ({
    name,
    position: i + 1,
    values: [
      ...new Set(
        live
          .map((v) => v.options.find((o) => o.name === name)?.value)
          .filter((x): x is string => !!x),
      ),
    ],
  }));
  return {
    productId: product.productId,
    storeId: product.storeId,
    handle: product.handle,
    ...product.fields,
    status: product.fields.status ?? "active",
    options,
    variants: live.map((v) => {
      const variantTitle =
        v.options.length > 0
          ? v.options.map((o) => o.value).join(" / ")
          : (title ?? v.sku ?? product.handle);
      const { key: _k, removed: _r, ...rest } = v;
      return {
        ...rest,
        title: variantTitle,
        displayName: v.options.length > 0 && title ? `${title} - ${variantTitle}` : variantTitle,
      };
    }),
    createdOn: product.createdOn,
    updatedOn: product.updatedOn,
    ...(product.deletedOn ? { deletedOn: product.deletedOn } : {}),
  };
}
