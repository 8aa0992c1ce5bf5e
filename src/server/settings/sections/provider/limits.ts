/**
 * The longest client ID and secret the form takes. Providers issue IDs and secrets of a few dozen
 * characters; anything far longer is a paste gone wrong (a whole file, a token), refused with a
 * message naming the field before anything is sent to the provider.
 */
export const CLIENT_ID_MAX = 200;
export const CLIENT_SECRET_MAX = 500;
