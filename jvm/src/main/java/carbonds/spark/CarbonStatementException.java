package carbonds.spark;

/**
 * A carbon-ds statement failed. An IllegalArgumentException, so that PySpark raises it as its own
 * IllegalArgumentException with this message, which starts with the carbon-ds error
 * ({@code carbon_ds.errors.CarbonTableError: ...}) that carbon_ds.sql raises again as that error.
 */
final class CarbonStatementException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    CarbonStatementException(String message) {
        super(message);
    }

    /** The message of a runner failure: the Python error's last "carbon_ds.errors...." line onwards. */
    static CarbonStatementException from(RuntimeException e) {
        String text = String.valueOf(e.getMessage());
        int at = text.lastIndexOf("carbon_ds.errors.");
        String message = at >= 0 ? text.substring(at).strip() : text;
        CarbonStatementException out = new CarbonStatementException(message);
        out.initCause(e);
        return out;
    }
}
