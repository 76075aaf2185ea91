/** Character codes of JSON's structural characters, for the scanners that read bodies by code. */
export const QUOTE = 34;
export const BACKSLASH = 92;
export const OPEN_OBJECT = 123;
export const CLOSE_OBJECT = 125;
export const OPEN_ARRAY = 91;
export const CLOSE_ARRAY = 93;
export const COMMA = 44;
export const COLON = 58;
