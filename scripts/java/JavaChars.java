/** Prints the UTF-16 code units bson's StrictCharacterStreamJsonWriter writes unescaped, as ranges. */
public class JavaChars { public static void main(String[] a) {
  StringBuilder sb = new StringBuilder(); int start = -1;
  for (int c = 0; c <= 0x10000; c++) {
    boolean lit = false;
    if (c < 0x10000 && c != '"' && c != '\\' && c != '\b' && c != '\f' && c != '\n' && c != '\r' && c != '\t') {
      switch (Character.getType((char) c)) {
        case Character.UPPERCASE_LETTER: case Character.LOWERCASE_LETTER: case Character.TITLECASE_LETTER:
        case Character.OTHER_LETTER: case Character.DECIMAL_DIGIT_NUMBER: case Character.LETTER_NUMBER:
        case Character.OTHER_NUMBER: case Character.SPACE_SEPARATOR: case Character.CONNECTOR_PUNCTUATION:
        case Character.DASH_PUNCTUATION: case Character.START_PUNCTUATION: case Character.END_PUNCTUATION:
        case Character.INITIAL_QUOTE_PUNCTUATION: case Character.FINAL_QUOTE_PUNCTUATION:
        case Character.OTHER_PUNCTUATION: case Character.MATH_SYMBOL: case Character.CURRENCY_SYMBOL:
        case Character.MODIFIER_SYMBOL: case Character.OTHER_SYMBOL: lit = true; break;
        default: lit = false;
      }
    }
    if (lit && start < 0) start = c;
    if (!lit && start >= 0) { sb.append(start).append('-').append(c - 1).append('\n'); start = -1; }
  }
  System.out.print(sb);
}}
