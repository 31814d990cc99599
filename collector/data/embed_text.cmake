# cmake -DINPUT=file -DOUTPUT=file.inc -P embed_text.cmake
# Writes INPUT's text as one C++ raw string literal, for #include into a definition, so the
# installed binary carries its default rule tables and reads no data file.
file(READ "${INPUT}" text)
file(WRITE "${OUTPUT}.tmp" "R\"gpuattr_embed(${text})gpuattr_embed\"\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
